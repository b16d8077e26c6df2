// slowstart is started by evil's forged-during-exec mode: libslow.so's
// resolver runs while its loader relocates it (see libslow.c). It prints
// the result of the resolver's mkdir: "slow-mkdir RESULT ERRNO".
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

extern long slow_mkdir_result;
int slow(void);

int main(void)
{
	long r = slow_mkdir_result;
	printf("slow-mkdir %ld %s\n", r, r < 0 ? strerrorname_np(-r) : "-");
	return slow() == 1 ? 0 : 1;
}
