#ifndef _ASM_UNISTD_X32_H
#define _ASM_UNISTD_X32_H

#define __NR_read (__X32_SYSCALL_BIT + 0)
#define __NR_write (__X32_SYSCALL_BIT + 1)
#define __NR_rt_sigaction (__X32_SYSCALL_BIT + 512)
#define __NR_execve (__X32_SYSCALL_BIT + 520)

#endif /* _ASM_UNISTD_X32_H */
