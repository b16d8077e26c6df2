/* The program: calls the library of each mode it is given. */
#include <string.h>

long chain_a(void);
long constant(void);
long chosen(int);
long direct(void);
long computed(int);
long pointers(void);
int stdio_write(void);
long tables(void);
long tailed(void);
int flags_set(const char *);
int flags_clear(const char *);
long ifunc_use(void);
long sections(void);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "chain") == 0)
			chain_a();
		else if (strcmp(argv[i], "numbers") == 0)
			constant(), chosen(i & 1), direct(), tailed();
		else if (strcmp(argv[i], "table") == 0)
			computed(i);
		else if (strcmp(argv[i], "pointers") == 0)
			pointers();
		else if (strcmp(argv[i], "stdio") == 0)
			stdio_write();
		else if (strcmp(argv[i], "tables") == 0)
			tables();
		else if (strcmp(argv[i], "flags") == 0)
			flags_set("~/*"), flags_clear("/*");
		else if (strcmp(argv[i], "ifunc") == 0)
			ifunc_use();
		else if (strcmp(argv[i], "sections") == 0)
			sections();
	}
	return 0;
}
