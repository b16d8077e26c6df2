// binary-trees (the Benchmarks Game's allocation benchmark): build and
// walk many short-lived complete binary trees and one long-lived tree.
//   binary_trees DEPTH
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *left, *right;
};

static struct node *make(int depth)
{
	struct node *n = malloc(sizeof *n);
	if (depth > 0) {
		n->left = make(depth - 1);
		n->right = make(depth - 1);
	} else {
		n->left = n->right = NULL;
	}
	return n;
}

static long check(const struct node *n)
{
	return 1 + (n->left ? check(n->left) + check(n->right) : 0);
}

static void drop(struct node *n)
{
	if (n->left) {
		drop(n->left);
		drop(n->right);
	}
	free(n);
}

int main(int argc, char **argv)
{
	int max = argc > 1 ? atoi(argv[1]) : 14;
	struct node *long_lived = make(max);
	for (int d = 4; d <= max; d += 2) {
		int iterations = 1 << (max - d + 4);
		long sum = 0;
		for (int i = 0; i < iterations; i++) {
			struct node *t = make(d);
			sum += check(t);
			drop(t);
		}
		printf("%d trees of depth %d check: %ld\n", iterations, d, sum);
	}
	printf("long lived tree of depth %d check: %ld\n", max, check(long_lived));
	drop(long_lived);
	return 0;
}
