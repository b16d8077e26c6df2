//go:build ignore

// take_snapshot copies where a thread of a supervised process waits for
// the supervisor: as the scheduler switches out a thread that has a
// seccomp user notification pending, its user registers, as the system
// call entered the kernel, and the top of its user stack, stamped with
// the notification's id. The supervisor reads the copy from a shared
// mapping instead of /proc/TID/syscall and process_vm_readv, two system
// calls that cost more than the notification's round trip itself. It
// runs at the sched_switch tracepoint, on every context switch of the
// machine: what it costs a thread it does not watch is one hash lookup.

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char __license[] SEC("license") = "Dual MIT/GPL";

// The kernel's structures, as far as they are read; CO-RE finds the
// offsets of the running kernel's.
struct list_head {
	struct list_head *next;
} __attribute__((preserve_access_index));

struct seccomp_knotif {
	struct task_struct *task;
	__u64 id;
	struct list_head list;
} __attribute__((preserve_access_index));

struct notification {
	struct list_head notifications;
} __attribute__((preserve_access_index));

struct seccomp_filter {
	struct seccomp_filter *prev;
	struct notification *notif;
} __attribute__((preserve_access_index));

struct seccomp {
	struct seccomp_filter *filter;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *group_leader;
	__u64 start_time;
	struct seccomp seccomp;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r10, r9, r8, dx, si, di, orig_ax, ip, sp;
} __attribute__((preserve_access_index));

// The processes watched, by tgid; children are added as they are forked.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tasks SEC(".maps");

#define SLOTS 256
#define STACK_BYTES 2048
#define SHORT_STACK 256
// Filters a process may have stacked, and notifications pending on the
// one with a listener, looked through for the thread's.
#define MAX_FILTERS 8
#define MAX_PENDING 128

// The registers, in this order (snapshot.go's Regs).
enum { NR, DI, SI, DX, R10, R8, R9, SP, IP, BX, BP, R12, R13, R14, R15, NREGS };

// A snapshot, in slot tid % SLOTS. seq is odd while it is written:
// readers take a copy between two equal even values.
struct snapshot {
	__u64 seq;
	__u32 tid;
	__u32 tgid;
	// started is when the thread's process started, which tells it from
	// an earlier process with the same id.
	__u64 started;
	__u64 id;
	__u64 regs[16];
	__u64 epoch[2];
	__u32 epoch_ok;
	__u32 len;
	__u8 stack[STACK_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, struct snapshot);
} snapshots SEC(".maps");

// epoch_at is where the audit library's epoch page lies in every process
// (it is inherited across exec), 0 for none.
volatile const __u64 epoch_at = 0;

// pending finds the id of the notification t waits for, in the list of
// the filter that has a listener.
static int pending(struct task_struct *t, __u64 *id)
{
	struct seccomp_filter *f = BPF_CORE_READ(t, seccomp.filter);
	for (int i = 0; i < MAX_FILTERS && f; i++) {
		struct notification *n = BPF_CORE_READ(f, notif);
		if (n) {
			struct list_head *head = &n->notifications;
			struct list_head *pos = BPF_CORE_READ(head, next);
			for (int j = 0; j < MAX_PENDING && pos && pos != head; j++) {
				struct seccomp_knotif *k = (void *)pos - bpf_core_field_offset(struct seccomp_knotif, list);
				if (BPF_CORE_READ(k, task) == t) {
					*id = BPF_CORE_READ(k, id);
					return 1;
				}
				pos = BPF_CORE_READ(pos, next);
			}
			return 0;
		}
		f = BPF_CORE_READ(f, prev);
	}
	return 0;
}

static void copy_regs(struct snapshot *s, struct pt_regs *r)
{
	s->regs[NR] = BPF_CORE_READ(r, orig_ax);
	s->regs[DI] = BPF_CORE_READ(r, di);
	s->regs[SI] = BPF_CORE_READ(r, si);
	s->regs[DX] = BPF_CORE_READ(r, dx);
	s->regs[R10] = BPF_CORE_READ(r, r10);
	s->regs[R8] = BPF_CORE_READ(r, r8);
	s->regs[R9] = BPF_CORE_READ(r, r9);
	s->regs[SP] = BPF_CORE_READ(r, sp);
	s->regs[IP] = BPF_CORE_READ(r, ip);
	s->regs[BX] = BPF_CORE_READ(r, bx);
	s->regs[BP] = BPF_CORE_READ(r, bp);
	s->regs[R12] = BPF_CORE_READ(r, r12);
	s->regs[R13] = BPF_CORE_READ(r, r13);
	s->regs[R14] = BPF_CORE_READ(r, r14);
	s->regs[R15] = BPF_CORE_READ(r, r15);
}

SEC("tp_btf/sched_switch")
int take_snapshot(__u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1];
	__u32 tgid = prev->tgid;
	if (!bpf_map_lookup_elem(&tasks, &tgid))
		return 0;
	__u64 id;
	if (!pending(prev, &id))
		return 0;
	__u32 tid = prev->pid, slot = tid % SLOTS;
	struct snapshot *s = bpf_map_lookup_elem(&snapshots, &slot);
	if (!s)
		return 0;
	// Another CPU writing the slot, for a thread whose id shares it:
	// that thread's snapshot wins, this one's supervisor reads /proc.
	__u64 seq = s->seq;
	if (seq & 1 || __sync_val_compare_and_swap(&s->seq, seq, seq + 1) != seq)
		return 0;
	s->tid = tid;
	s->tgid = tgid;
	s->started = BPF_CORE_READ(prev, group_leader, start_time);
	s->id = id;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	copy_regs(s, regs);
	// The scheduler runs on prev's behalf: its memory is the user
	// memory read. Pages not present fail the read, which cannot fault.
	s->epoch_ok = epoch_at && bpf_probe_read_user(s->epoch, sizeof s->epoch, (void *)epoch_at) == 0;
	void *sp = (void *)s->regs[SP];
	if (bpf_probe_read_user(s->stack, STACK_BYTES, sp) == 0)
		s->len = STACK_BYTES;
	else if (bpf_probe_read_user(s->stack, SHORT_STACK, sp) == 0)
		s->len = SHORT_STACK;
	else
		s->len = 0;
	__sync_fetch_and_add(&s->seq, 1);
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
