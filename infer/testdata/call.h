/* CALL(nr) is the body of a function that makes system call nr with its
   own syscall instruction, which infer must find by value, and returns
   the kernel's answer: the fixtures' calls libc never makes, which the
   kernel refuses (ENOSYS). */
#define CALL(nr)                                                                       \
	{                                                                              \
		long r;                                                                \
		__asm__ volatile("syscall" : "=a"(r) : "a"((long)(nr)) : "rcx", "r11", "memory"); \
		return r;                                                              \
	}
