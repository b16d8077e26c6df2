/*
 * The runtime's formatting, for messages and the launcher's lines: the
 * conversions the library uses (d i u x X p s c %, the flags - 0 #, a
 * width, a precision, the lengths hh h l ll z j t), as glibc prints them.
 * Output goes to a buffer (snprintf) or, a buffer at a time, to a
 * descriptor (vdprintf).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

/* Where the output goes: buf, of size bytes, of which len are used, and
   fd, where a full buf is written, or -1 to drop what does not fit. */
struct sink {
	char *buf;
	size_t size, len;
	int fd;
	size_t total;
	bool failed;
};

static void flush(struct sink *s)
{
	size_t done = 0;
	while (done < s->len) {
		ssize_t n = write(s->fd, s->buf + done, s->len - done);
		if (n <= 0) {
			s->failed = true;
			break;
		}
		done += n;
	}
	s->len = 0;
}

static void put(struct sink *s, const char *p, size_t n)
{
	s->total += n;
	for (; n > 0; p++, n--) {
		if (s->len == s->size) {
			if (s->fd < 0)
				return;
			flush(s);
		}
		s->buf[s->len++] = *p;
	}
}

static void pad(struct sink *s, char c, int n)
{
	for (; n > 0; n--)
		put(s, &c, 1);
}

struct spec {
	bool left, zero, alt;
	int width, precision;	/* -1 when not given */
};

/* field puts text, n bytes, after prefix ("0x", "-"), padded to the
   spec's width. */
static void field(struct sink *s, const struct spec *f, const char *prefix, const char *text, size_t n)
{
	size_t p = strlen(prefix);
	int fill = f->width > (int)(p + n) ? f->width - (int)(p + n) : 0;
	if (!f->left && !f->zero)
		pad(s, ' ', fill);
	put(s, prefix, p);
	if (!f->left && f->zero)
		pad(s, '0', fill);
	put(s, text, n);
	if (f->left)
		pad(s, ' ', fill);
}

static void number(struct sink *s, const struct spec *f, uintmax_t v, unsigned base, bool upper, const char *prefix)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char text[32];
	size_t n = sizeof text;
	/* A precision of 0 prints 0 as nothing. */
	if (v != 0 || f->precision != 0)
		do
			text[--n] = digits[v % base];
		while (v /= base);
	/* A precision sets the least number of digits, and turns off 0. */
	struct spec g = *f;
	if (f->precision >= 0) {
		while ((int)(sizeof text - n) < f->precision && n > 0)
			text[--n] = '0';
		g.zero = false;
	}
	field(s, &g, prefix, text + n, sizeof text - n);
}

/* The length modifiers, by how many longs they are. */
enum length { INT, CHAR, SHORT, LONG };

static uintmax_t unsigned_arg(va_list *ap, enum length l)
{
	switch (l) {
	case CHAR: return (unsigned char)va_arg(*ap, unsigned);
	case SHORT: return (unsigned short)va_arg(*ap, unsigned);
	case LONG: return va_arg(*ap, unsigned long);
	default: return va_arg(*ap, unsigned);
	}
}

static intmax_t signed_arg(va_list *ap, enum length l)
{
	switch (l) {
	case CHAR: return (signed char)va_arg(*ap, int);
	case SHORT: return (short)va_arg(*ap, int);
	case LONG: return va_arg(*ap, long);
	default: return va_arg(*ap, int);
	}
}

static int parse_int(const char **fmt, va_list *ap)
{
	if (**fmt == '*') {
		(*fmt)++;
		return va_arg(*ap, int);
	}
	int v = 0;
	for (; **fmt >= '0' && **fmt <= '9'; (*fmt)++)
		v = v * 10 + (**fmt - '0');
	return v;
}

static void format(struct sink *s, const char *fmt, va_list *ap)
{
	for (; *fmt != '\0'; fmt++) {
		if (*fmt != '%') {
			put(s, fmt, 1);
			continue;
		}
		struct spec f = {.precision = -1};
		for (;; fmt++) {
			if (fmt[1] == '-')
				f.left = true;
			else if (fmt[1] == '0')
				f.zero = true;
			else if (fmt[1] == '#')
				f.alt = true;
			else
				break;
		}
		fmt++;
		f.width = parse_int(&fmt, ap);
		if (f.width < 0) {
			f.left = true;
			f.width = -f.width;
		}
		if (*fmt == '.') {
			fmt++;
			f.precision = parse_int(&fmt, ap);
		}
		enum length l = INT;
		for (;; fmt++) {
			if (*fmt == 'h')
				l = l == SHORT ? CHAR : SHORT;
			else if (*fmt == 'l' || *fmt == 'z' || *fmt == 'j' || *fmt == 't')
				l = LONG;
			else
				break;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			intmax_t v = signed_arg(ap, l);
			number(s, &f, v < 0 ? -(uintmax_t)v : (uintmax_t)v, 10, false, v < 0 ? "-" : "");
			break;
		}
		case 'u':
			number(s, &f, unsigned_arg(ap, l), 10, false, "");
			break;
		case 'x':
		case 'X': {
			uintmax_t v = unsigned_arg(ap, l);
			const char *prefix = f.alt && v != 0 ? (*fmt == 'x' ? "0x" : "0X") : "";
			number(s, &f, v, 16, *fmt == 'X', prefix);
			break;
		}
		case 'p': {
			uintptr_t v = (uintptr_t)va_arg(*ap, void *);
			if (v == 0)
				field(s, &f, "", "(nil)", 5);
			else
				number(s, &f, v, 16, false, "0x");
			break;
		}
		case 's': {
			const char *str = va_arg(*ap, const char *);
			if (str == NULL)
				str = f.precision < 0 || f.precision >= 6 ? "(null)" : "";
			size_t n = strlen(str);
			if (f.precision >= 0 && (size_t)f.precision < n)
				n = f.precision;
			f.zero = false;
			field(s, &f, "", str, n);
			break;
		}
		case 'c': {
			char c = (char)va_arg(*ap, int);
			field(s, &f, "", &c, 1);
			break;
		}
		case '%':
			put(s, "%", 1);
			break;
		default:
			/* An unknown conversion is printed as it stands. */
			put(s, "%", 1);
			if (*fmt == '\0')
				return;
			put(s, fmt, 1);
		}
	}
}

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
{
	char none[1];
	struct sink s = {.buf = size > 0 ? buf : none, .size = size > 0 ? size - 1 : 0, .fd = -1};
	va_list copy;
	va_copy(copy, ap);
	format(&s, fmt, &copy);
	va_end(copy);
	s.buf[s.len] = '\0';
	return s.total;
}

int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int vdprintf(int fd, const char *restrict fmt, va_list ap)
{
	char buf[1024];
	struct sink s = {.buf = buf, .size = sizeof buf, .fd = fd};
	va_list copy;
	va_copy(copy, ap);
	format(&s, fmt, &copy);
	va_end(copy);
	flush(&s);
	return s.failed ? -1 : (int)s.total;
}
