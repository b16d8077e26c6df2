/*
 * demo: a program with two libraries, libgetpid.so and libmk.so, for
 * syscell's demo. Normally each library does its job; with "attack DIR",
 * libmk.so tries to create DIR, a call its compartment does not allow.
 */
#include <stdio.h>
#include <string.h>

long demo_whoami(void);
int demo_parse(const char *s);
int demo_attack(const char *dir);

int main(int argc, char **argv) {
	printf("pid %ld, parsed %d bytes\n", demo_whoami(), demo_parse("hello, compartments"));
	if (argc == 3 && strcmp(argv[1], "attack") == 0) {
		int err = demo_attack(argv[2]);
		printf("libmk.so: mkdir %s: %s\n", argv[2], err ? strerror(err) : "created");
		return err ? 1 : 0;
	}
	return 0;
}
