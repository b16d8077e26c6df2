/*
 * The audit library's runtime (audit/rt_*.c), linked into this program,
 * against glibc's own functions, found past it (RTLD_NEXT): the same
 * results, the same errno, the same messages. Prints what differs, and
 * "ok" when nothing does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void *glibc(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (f == NULL) {
		fprintf(stderr, "glibc has no %s\n", name);
		exit(2);
	}
	return f;
}

static void differ(const char *what, const char *ours, const char *theirs)
{
	fprintf(stderr, "%s: the runtime's %s, glibc's %s\n", what, ours, theirs);
	failures++;
}

#define FORMAT(...)                                                                          \
	do {                                                                                 \
		char a[64], b[64];                                                           \
		int n = snprintf(a, sizeof a, __VA_ARGS__);                                  \
		int m = ((int (*)(char *, size_t, const char *, ...))glibc("snprintf"))(b, sizeof b, __VA_ARGS__); \
		if (n != m || strcmp(a, b) != 0)                                             \
			differ(#__VA_ARGS__, a, b);                                          \
	} while (0)

static void formats(void)
{
	FORMAT("%s|%s|%5s|%-5s|%.2s", "abc", "", "ab", "ab", "abc");
	FORMAT("%d %d %d %i %5d %-5d| %05d", 0, -1, INT_MIN, INT_MAX, 42, 42, -42);
	FORMAT("%ld %ld %lu %lu", LONG_MIN, LONG_MAX, 0UL, ULONG_MAX);
	FORMAT("%u %x %X %lx %#lx %#lx %#x", 0u, 255u, 255u, 0xdeadbeefUL, 0UL, 0x1000UL, 0u);
	FORMAT("%zu %zx %zu", (size_t)0, (size_t)4096, SIZE_MAX);
	FORMAT("%p %p", (void *)0, (void *)0x7fff1234);
	FORMAT("%c%c %% %8.3d %.0d|%.0x|", 'a', 'b', 7, 0, 0u);
	FORMAT("%s", "a string longer than the buffer it is printed into, which cuts it short");
	FORMAT("%*d|%-*d|%.*s", 6, 1, 6, 2, 3, "abcdef");
}

static void errors(void)
{
	char *(*theirs)(int) = glibc("strerror");
	for (int e = -2; e < 140; e++) {
		char a[128];
		snprintf(a, sizeof a, "%s", strerror(e));
		const char *b = theirs(e);
		if (strcmp(a, b) != 0)
			differ("strerror", a, b);
	}
}

static void numbers(void)
{
	static const char *const inputs[] = {
		"0", "42", "-42", "+7", "  12", "12x", "", "x", "0x1f", "0X1F", "0x", "010", "-", "7fffffffffffffff",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "ffffffffffffffff", "10000000000000000",
	};
	static const int bases[] = {0, 10, 16};
	long (*their_l)(const char *, char **, int) = glibc("strtol");
	unsigned long (*their_ul)(const char *, char **, int) = glibc("strtoul");
	for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
		for (size_t k = 0; k < sizeof bases / sizeof *bases; k++) {
			char *e1, *e2, what[96], a[96], b[96];
			snprintf(what, sizeof what, "strtol(\"%s\", %d)", inputs[i], bases[k]);
			errno = 0;
			long l1 = strtol(inputs[i], &e1, bases[k]);
			int err1 = errno;
			errno = 0;
			long l2 = their_l(inputs[i], &e2, bases[k]);
			snprintf(a, sizeof a, "%ld end %td errno %d", l1, e1 - inputs[i], err1);
			snprintf(b, sizeof b, "%ld end %td errno %d", l2, e2 - inputs[i], errno);
			if (strcmp(a, b) != 0)
				differ(what, a, b);
			snprintf(what, sizeof what, "strtoul(\"%s\", %d)", inputs[i], bases[k]);
			errno = 0;
			unsigned long u1 = strtoul(inputs[i], &e1, bases[k]);
			err1 = errno;
			errno = 0;
			unsigned long u2 = their_ul(inputs[i], &e2, bases[k]);
			snprintf(a, sizeof a, "%lu end %td errno %d", u1, e1 - inputs[i], err1);
			snprintf(b, sizeof b, "%lu end %td errno %d", u2, e2 - inputs[i], errno);
			if (strcmp(a, b) != 0)
				differ(what, a, b);
		}
	}
}

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static void strings(void)
{
	int (*their_cmp)(const char *, const char *) = glibc("strcmp");
	int (*their_ncmp)(const char *, const char *, size_t) = glibc("strncmp");
	static const char *const pairs[][2] = {{"a", "b"}, {"b", "a"}, {"", "a"}, {"abc", "abc"}, {"ab", "abc"}, {"\xff", "a"}};
	for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
		if (sign(strcmp(pairs[i][0], pairs[i][1])) != sign(their_cmp(pairs[i][0], pairs[i][1])))
			differ("strcmp", pairs[i][0], pairs[i][1]);
		for (size_t n = 0; n < 4; n++)
			if (sign(strncmp(pairs[i][0], pairs[i][1], n)) != sign(their_ncmp(pairs[i][0], pairs[i][1], n)))
				differ("strncmp", pairs[i][0], pairs[i][1]);
	}
	char *(*their_tok)(char *, const char *, char **) = glibc("strtok_r");
	static const char *const lines[] = {"a b  c", "  lead trail  ", "", "   ", "one"};
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		char x[32], y[32], a[96] = "", b[96] = "";
		strcpy(x, lines[i]);
		strcpy(y, lines[i]);
		char *s1, *s2;
		for (char *t = strtok_r(x, " ", &s1); t != NULL; t = strtok_r(NULL, " ", &s1))
			snprintf(a + strlen(a), sizeof a - strlen(a), "[%s]", t);
		for (char *t = their_tok(y, " ", &s2); t != NULL; t = their_tok(NULL, " ", &s2))
			snprintf(b + strlen(b), sizeof b - strlen(b), "[%s]", t);
		if (strcmp(a, b) != 0)
			differ("strtok_r", a, b);
	}
	const char *path = "/usr/lib/libc.so.6";
	if (strrchr(path, '/') != path + 8 || strchr(path, 'l') != path + 5 || strchr(path, '\0') != path + 18 ||
	    strrchr(path, 'z') != NULL || strlen(path) != 18)
		differ("strchr, strrchr, strlen", "", "");
	void *(*their_move)(void *, const void *, size_t) = glibc("memmove");
	char x[16] = "abcdefgh", y[16] = "abcdefgh";
	memmove(x + 2, x, 6);
	memmove(x, x + 1, 4);
	their_move(y + 2, y, 6);
	their_move(y, y + 1, 4);
	if (memcmp(x, y, sizeof x) != 0 || memcmp("a", "b", 1) >= 0 || memcmp("ab", "ab", 2) != 0)
		differ("memmove, memcmp", x, y);
}

int main(void)
{
	formats();
	errors();
	numbers();
	strings();
	if (failures == 0)
		puts("ok");
	return failures != 0;
}
