// kvm_exit_ns: the cost of one exit from a KVM guest to this process and
// back, which a Dune-like heap guard pays on every system call of the
// guarded program. The guest is four bytes of real-mode code: out; jmp.
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXITS 20000

double kvm_exit_ns(void)
{
	static const uint8_t code[] = {0xe6, 0x10, 0xeb, 0xfc}; // out 0x10, al; jmp -4
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return -1;
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || mem == MAP_FAILED)
		return -1;
	memcpy(mem, code, sizeof code);
	struct kvm_userspace_memory_region region = {
		.slot = 0, .guest_phys_addr = 0x1000, .memory_size = 4096, .userspace_addr = (uintptr_t)mem};
	int cpu = -1;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) == 0)
		cpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	int size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (cpu < 0 || size <= 0)
		return -1;
	struct kvm_run *run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, cpu, 0);
	struct kvm_sregs sregs;
	ioctl(cpu, KVM_GET_SREGS, &sregs);
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	ioctl(cpu, KVM_SET_SREGS, &sregs);
	struct kvm_regs regs = {.rip = 0x1000, .rflags = 2};
	ioctl(cpu, KVM_SET_REGS, &regs);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < EXITS; i++)
		if (ioctl(cpu, KVM_RUN, 0) < 0 || run->exit_reason != KVM_EXIT_IO)
			return -1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	munmap(run, (size_t)size);
	munmap(mem, 4096);
	close(cpu);
	close(vm);
	close(kvm);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / EXITS;
}
