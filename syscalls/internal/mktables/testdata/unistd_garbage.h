#define __NR_read 0
#define __NR_write (__NR_read + 1)
