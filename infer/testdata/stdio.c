/* A write from deep inside stdio, through its vtables. */
#include <stdio.h>

int stdio_write(void)
{
	printf("stdio\n");
	return fflush(stdout);
}
