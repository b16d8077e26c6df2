// cfrac-like arithmetic on many small heap-allocated big numbers: every
// operation returns a fresh number and its operands are freed, as in
// cfrac's pcvt/pmul/pdiv code. Computes Fibonacci numbers and factorials
// digit by digit (base 10^9).
//   bignum N
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE 1000000000u

struct num {
	int len;
	uint32_t d[];
};

static struct num *make(int len)
{
	struct num *n = malloc(sizeof *n + (size_t)len * sizeof(uint32_t));
	n->len = len;
	return n;
}

static struct num *small(uint32_t v)
{
	struct num *n = make(1);
	n->d[0] = v;
	return n;
}

static struct num *add(const struct num *a, const struct num *b)
{
	int len = (a->len > b->len ? a->len : b->len) + 1;
	struct num *r = make(len);
	uint64_t carry = 0;
	for (int i = 0; i < len; i++) {
		uint64_t s = carry + (i < a->len ? a->d[i] : 0) + (i < b->len ? b->d[i] : 0);
		r->d[i] = (uint32_t)(s % BASE);
		carry = s / BASE;
	}
	while (r->len > 1 && r->d[r->len - 1] == 0)
		r->len--;
	return r;
}

static struct num *mul_small(const struct num *a, uint32_t m)
{
	struct num *r = make(a->len + 1);
	uint64_t carry = 0;
	for (int i = 0; i < a->len; i++) {
		uint64_t p = (uint64_t)a->d[i] * m + carry;
		r->d[i] = (uint32_t)(p % BASE);
		carry = p / BASE;
	}
	r->d[a->len] = (uint32_t)carry;
	if (r->d[r->len - 1] == 0 && r->len > 1)
		r->len--;
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	unsigned long check = 0;
	for (int round = 0; round < 20; round++) {
		struct num *a = small(0), *b = small(1);
		for (int i = 0; i < n / 20; i++) {
			struct num *c = add(a, b);
			free(a);
			a = b;
			b = c;
		}
		check += b->d[0] + (unsigned long)b->len;
		free(a);
		free(b);
		struct num *f = small(1);
		for (uint32_t i = 2; i < (uint32_t)n / 40; i++) {
			struct num *g = mul_small(f, i);
			free(f);
			f = g;
		}
		check += f->d[f->len - 1] + (unsigned long)f->len;
		free(f);
	}
	printf("check %lu\n", check);
	return 0;
}
