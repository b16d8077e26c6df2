//go:build ignore

// count_sys_enter counts the calls of one system call made by the processes
// user space chose. It runs at the raw sys_enter tracepoint, that is on
// every system call of every process on the machine, so that what it costs
// a process it does not count is one hash lookup.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char __license[] SEC("license") = "Dual MIT/GPL";

// The number of the system call to count, set at load time: numbers differ
// between architectures.
volatile const __u64 target_nr = 0;

// Calls of target_nr per process (tgid), for the processes user space put a
// key in for.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("raw_tp/sys_enter")
int count_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 *n = bpf_map_lookup_elem(&counts, &tgid);

	// args[1] of sys_enter is the system call number.
	if (n && ctx->args[1] == target_nr)
		__sync_fetch_and_add(n, 1);
	return 0;
}
