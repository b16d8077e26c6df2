#define __NR_read 0
#define __NR_read 1
