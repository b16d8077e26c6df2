#ifndef _ASM_UNISTD_64_H
#define _ASM_UNISTD_64_H

#define __NR_read 0
#define __NR_write 1
#define __NR_rt_sigaction 13

#endif /* _ASM_UNISTD_64_H */
