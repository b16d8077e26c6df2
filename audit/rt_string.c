/*
 * The runtime's string and memory functions, and the number parsing the
 * launcher's lines need. The compiler calls memcpy, memset and memmove
 * itself for structure copies: they must be here even where the code
 * names none (build.sh keeps it from turning these loops back into
 * calls of themselves).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	while (n-- > 0)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n-- > 0)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	while (n-- > 0)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (; n > 0; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	const char *p = s;
	while (*p != '\0')
		p++;
	return p - s;
}

int strcmp(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n > 0; n--, a++, b++)
		if (*a != *b || *a == '\0')
			return (unsigned char)*a - (unsigned char)*b;
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (*s == '\0')
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	const char *last = NULL;
	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (*s == '\0')
			return (char *)last;
	}
}

char *strcpy(char *restrict dst, const char *restrict src)
{
	return memcpy(dst, src, strlen(src) + 1);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *c = malloc(n);
	return c != NULL ? memcpy(c, s, n) : NULL;
}

char *strtok_r(char *restrict s, const char *restrict delim, char **restrict save)
{
	if (s == NULL)
		s = *save;
	while (*s != '\0' && strchr(delim, *s) != NULL)
		s++;
	if (*s == '\0') {
		*save = s;
		return NULL;
	}
	char *token = s;
	while (*s != '\0' && strchr(delim, *s) == NULL)
		s++;
	if (*s != '\0')
		*s++ = '\0';
	*save = s;
	return token;
}

/* digit is c's value as a digit, or 36 for none. */
static unsigned digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 36;
}

static bool space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* parse is strtoul's and strtol's common part: the magnitude, its sign,
   and whether it exceeded limit. */
static unsigned long parse(const char *s, char **end, int base, bool *negative, unsigned long limit, bool *over)
{
	const char *p = s;
	while (space(*p))
		p++;
	*negative = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && digit(p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = *p == '0' ? 8 : 10;
	}
	unsigned long v = 0;
	const char *digits = p;
	*over = false;
	for (unsigned d; (d = digit(*p)) < (unsigned)base; p++) {
		if (v > (limit - d) / base)
			*over = true;
		else
			v = v * base + d;
	}
	if (end != NULL)
		*end = (char *)(p == digits ? s : p);
	return v;
}

unsigned long strtoul(const char *restrict s, char **restrict end, int base)
{
	bool negative, over;
	unsigned long v = parse(s, end, base, &negative, ULONG_MAX, &over);
	if (over) {
		errno = ERANGE;
		return ULONG_MAX;
	}
	return negative ? -v : v;
}

long strtol(const char *restrict s, char **restrict end, int base)
{
	bool negative, over;
	unsigned long v = parse(s, end, base, &negative, (unsigned long)LONG_MAX + 1, &over);
	if (over || (!negative && v > LONG_MAX)) {
		errno = ERANGE;
		return negative ? LONG_MIN : LONG_MAX;
	}
	return negative ? (long)-v : (long)v;
}
