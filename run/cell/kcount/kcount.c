//go:build ignore

// count_calls counts the system calls of a process tree that the kernel
// lets run, by the code that makes them: the range of the instruction
// pointer, which names a compartment's stub slot or code, the runtime's
// code or code the layout does not know. It runs at the raw sys_enter
// tracepoint, which the kernel reaches only for calls seccomp allowed (or
// its supervisor continued), on every system call of the machine: what it
// costs a process it does not count is one hash lookup.

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char __license[] SEC("license") = "Dual MIT/GPL";

struct task_struct {
	int tgid;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long ip;
} __attribute__((preserve_access_index));

// The processes counted, by tgid; children are added as they are forked.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tasks SEC(".maps");

// A range of code, [start, end), and who owns it. User space fills
// ranges[0, nranges) sorted by start and disjoint.
struct range {
	__u64 start, end;
	__u32 owner;
	__u32 pad;
};

#define MAX_RANGES 512
#define SEARCH_STEPS 10 // log2(MAX_RANGES) + 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RANGES);
	__type(key, __u32);
	__type(value, struct range);
} ranges SEC(".maps");

volatile const __u32 nranges = 0;
// unknown is the owner of code in no range.
volatile const __u32 unknown = 0;

struct key {
	__u32 owner;
	__u32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct key);
	__type(value, __u64);
} counts SEC(".maps");

// owner_of finds the range holding ip by binary search.
static __u32 owner_of(__u64 ip)
{
	__u32 lo = 0, hi = nranges;
	for (int i = 0; i < SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		struct range *r = bpf_map_lookup_elem(&ranges, &mid);
		if (!r)
			break;
		if (ip < r->start)
			hi = mid;
		else if (ip >= r->end)
			lo = mid + 1;
		else
			return r->owner;
	}
	return unknown;
}

SEC("raw_tp/sys_enter")
int count_calls(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&tasks, &tgid))
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	struct key k = {.owner = owner_of(BPF_CORE_READ(regs, ip)), .nr = ctx->args[1]};
	__u64 one = 1, *n = bpf_map_lookup_elem(&counts, &k);
	if (n)
		*n += 1;
	else
		bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int follow_fork(__u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0];
	struct task_struct *child = (void *)ctx[1];
	__u32 ptgid = parent->tgid;
	if (!bpf_map_lookup_elem(&tasks, &ptgid))
		return 0;
	__u32 ctgid = child->tgid;
	__u8 one = 1;
	bpf_map_update_elem(&tasks, &ctgid, &one, BPF_ANY);
	return 0;
}
