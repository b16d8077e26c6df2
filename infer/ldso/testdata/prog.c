/* The program: needs liba.so. */
long a(void);
int main(void) { return a() == 3 ? 0 : 1; }
