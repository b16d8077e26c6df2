//go:build ignore

// The recorder's eBPF side. For every system call of a traced task it
// either counts the call under the compartment user space already found for
// its call path (a walk of the "paths" trie), or sends user space a
// snapshot to attribute: the registers and the top of the user stack. It
// also tells user space which executable memory each address space holds,
// and follows tasks through fork, exec and exit.
//
// Tasks are traced by thread id (the tasks map): user space adds the first
// one, and every task a traced task creates is traced from its creation.
// An address space is named by its mm's context.ctx_id, which the kernel
// never reuses.
//
// Phases, where user space asks for them (phases): a process (thread
// group) serves from its own first call of a number user space put in the
// serving_from map (that call included), or from its birth when a process
// that serves forks it; its threads share its phase, and it keeps it
// across execve. Every counted call and every snapshot carries the phase
// of its process at that call, so that the kernel's counts and user
// space's attribution agree; but for a lagging thread: one its process
// started while starting, whose calls, until its process serves, carry
// the serving phase too. Its process's main thread serves when it gets
// there; the thread runs when the scheduler lets it, and what it did
// before that moment in one run it may do after it in the next (redis's
// bio threads mask SIGALRM once they run).

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char __license[] SEC("license") = "Dual MIT/GPL";

// Kernel types, reduced to the fields used here; CO-RE relocates the
// accesses to the running kernel's layout.

typedef struct {
	__u64 ctx_id;
	void *vdso;
} __attribute__((preserve_access_index)) mm_context_t;

struct file;

struct mm_struct {
	mm_context_t context;
	unsigned long brk;
	unsigned long start_stack;
	struct file *exe_file;
} __attribute__((preserve_access_index));

struct thread_info {
	__u32 status;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	struct mm_struct *mm;
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct qstr {
	__u32 len;
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	struct super_block *i_sb;
	unsigned long i_ino;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

struct bpf_iter_task_vma {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

#define VM_EXEC 0x4
#define TS_COMPAT 0x2
#define MAP_FIXED 0x10
#define MAX_ERRNO 4095

// Syscall numbers (x86_64) of the calls that change executable memory.
// The same calls made through the i386 ABI (int $0x80) by an x86_64
// program are not followed: code they map is unknown to user space, and
// calls from it fail to be attributed rather than being guessed.
#define NR_MMAP 9
#define NR_MPROTECT 10
#define NR_MUNMAP 11
#define NR_BRK 12
#define NR_MREMAP 25
#define NR_SHMAT 30
#define NR_SHMDT 67
#define NR_REMAP_FILE_PAGES 216
#define NR_PKEY_MPROTECT 329

// I386_FLAG marks, in a recorded syscall number, a call made through the
// i386 ABI; x32 numbers carry their own bit (0x40000000).
#define I386_FLAG 0x80000000u

// Sizes. STACK_BUF bounds the stack copy; stack_bytes, set at load time,
// chooses how much of it is used.
#define STACK_BUF 65536
#define PATH_BUF 4096
#define NAME_MAX_LEN 255
#define MAX_PATH_STEPS 48
#define MAX_WALK_STEPS 32
#define MAX_VMAS 8192
#define NREGS 21

volatile const __u32 stack_bytes = 32768;

// phases, set at load time, says whether calls are told apart by phase:
// without it the program never looks a process's phase up.
volatile const __u32 phases = 0;

// SERVING_SLOTS numbers the calls of each ABI (x86_64, x32, i386), 1024
// each, in the serving_from map.
#define SERVING_SLOTS 3072
#define X32_FLAG 0x40000000u

// The events user space reads from the ring buffer.
enum event_type {
	EV_SYSCALL = 1, // a call whose path the trie does not know
	EV_ASPACE = 2,  // a new address space: forget what was known of it
	EV_MAP = 3,     // an executable mapping
	EV_UNMAP = 4,   // a range whose executable mappings changed
	EV_FORK = 5,
	EV_EXEC = 6,
	EV_EXIT = 7,
	EV_COUNT = 8,   // calls counted for a compartment, when the counts map is full
	EV_SERVE = 9,   // a process starts serving (flags: from its birth)
};

// Kinds of executable mappings.
enum map_kind {
	MAP_FILE = 1,
	MAP_ANON = 2,
	MAP_VDSO = 3,
};

struct event_header {
	__u32 type;
	__u32 tid;
	__u32 tgid;
	__u32 flags; // EV_ASPACE: the snapshot failed; EV_MAP: the path is cut short
	__u64 aspace;
	__u64 epoch;
};

struct syscall_event {
	struct event_header h;
	__u32 nr;
	__u32 stack_len;
	// holes marks the pages of the copy that could not be read (never
	// touched, or swapped out): bit i stands for the i-th page the copy
	// spans, page 0 the one that holds the stack pointer. Their bytes in
	// stack are zeros.
	__u32 holes;
	__u32 phase; // PHASE_SERVING if the call was made while serving
	__u64 regs[NREGS]; // struct pt_regs
	__u8 stack[STACK_BUF];
};

struct map_event {
	struct event_header h;
	__u64 start;
	__u64 end;
	__u64 pgoff;
	__u64 ino;
	__u32 dev; // the kernel's dev_t: major << 20 | minor
	__u32 kind;
	__u32 path_len;
	__u32 pad;
	char path[PATH_BUF];
};

struct unmap_event {
	struct event_header h;
	__u64 start;
	__u64 end;
};

struct fork_event {
	struct event_header h;
	__u32 child_tid;
	__u32 child_tgid;
	__u64 child_aspace;
};

struct exec_event {
	struct event_header h;
	__u32 old_tid;
	__u32 filename_len;
	char filename[PATH_BUF];
};

struct exit_event {
	struct event_header h;
	__u32 group_dead;
	__u32 pad;
};

struct count_event {
	struct event_header h;
	__u32 compartment;
	__u32 nr;
	__u32 phase;
	__u32 pad;
};

// The paths trie. A node says what to read next (a stack word at an offset
// from the stack pointer, a word at an absolute address, or a register)
// or, at a leaf, the compartment the call belongs to. A child is found
// under its parent's id and the value read.
enum node_kind {
	NODE_STACK = 1,
	NODE_MEMORY = 2,
	NODE_REGISTER = 3,
	NODE_LEAF = 4,
};

// ROOT marks a root key: (ROOT | epoch, instruction pointer). User space
// numbers nodes below it.
#define ROOT (1ull << 63)

struct node_key {
	__u64 parent;
	__u64 value;
};

struct node {
	__u64 id;  // the node's id, or at a leaf the compartment
	__s64 arg; // the stack offset, the address, or the register's pt_regs index
	__u32 kind;
	__u32 pad;
};

// Phases of a process.
enum phase {
	PHASE_STARTING = 0,
	PHASE_SERVING = 1,
};

struct count_key {
	__u32 compartment;
	__u32 nr;
	__u32 phase;
};

// Why events were lost, counted per CPU in the lost map.
enum lost_reason {
	LOST_SYSCALL = 0, // a call's snapshot did not fit in the ring buffer
	LOST_MAP = 1,     // a mapping event did not fit
	LOST_TASK = 2,    // the tasks map was full: a new task is not traced
	LOST_COUNT = 3,   // a counted call fit neither the counts map nor the ring buffer
	LOST_OTHER = 4,   // a fork, exec, exit, address space or serve event did not fit, or a process's phase could not be kept
	LOST_REASONS = 5,
};

struct pending {
	__u64 nr;
	__u64 start;
	__u64 len;
	__u64 old_start;
	__u64 old_len;
	__u32 had_exec;
	__u32 pad;
};

struct scratch {
	union {
		struct syscall_event sys;
		struct map_event map;
		struct exec_event exec;
		// copy_page's bounds, as the verifier sees them, reach up to a
		// page past the snapshot's stack.
		__u8 sys_room[sizeof(struct syscall_event) + 4096];
	};
	char tmp[PATH_BUF + NAME_MAX_LEN + 1];
};

// Values of the tasks map: a traced task, one that saw its process serve,
// and a lagging thread (phases).
#define TASK_TRACED 1
#define TASK_SERVING 2
#define TASK_LAGGING 3

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} tasks SEC(".maps");

// serving holds, by process id, the processes that serve (phases).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} serving SEC(".maps");

// serving_from marks the calls whose first one starts a process's serving
// phase, by serving_slot.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SERVING_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} serving_from SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} aspaces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 262144);
	__type(key, struct node_key);
	__type(value, struct node);
} paths SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct count_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pending);
} pendings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

// Scratch areas, too large for a per-CPU map: one per CPU and program
// (user space sets max_entries). A program runs on one CPU from start to
// end, and the kernel never runs it twice at once on a CPU (it counts the
// nested run as a recursion miss instead), but where tracepoint programs
// can be preempted another program may run meanwhile: each has its own
// area.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} events SEC(".maps");

__u64 epoch_counter = 0;

static __always_inline void count_lost(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &reason);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline __u64 next_epoch(void)
{
	return __sync_fetch_and_add(&epoch_counter, 1) + 1;
}

// The programs that use scratch areas.
enum scratch_user {
	SCRATCH_ENTER = 0,
	SCRATCH_EXIT = 1,
	SCRATCH_EXEC = 2,
	SCRATCH_USERS = 3,
};

static __always_inline struct scratch *get_scratch(__u32 user)
{
	__u32 key = bpf_get_smp_processor_id() * SCRATCH_USERS + user;
	return bpf_map_lookup_elem(&scratches, &key);
}

static __always_inline void header(struct event_header *h, __u32 type, struct task_struct *task, __u64 aspace, __u64 epoch)
{
	h->type = type;
	h->tid = task->pid;
	h->tgid = task->tgid;
	h->flags = 0;
	h->aspace = aspace;
	h->epoch = epoch;
}

// output sends a small event, counting it lost if it does not fit.
static __always_inline void output(void *ev, __u64 size, __u32 reason)
{
	if (bpf_ringbuf_output(&events, ev, size, 0) != 0)
		count_lost(reason);
}

// path_walk is the state of file_path's walk up the dentries.
struct path_walk {
	struct dentry *d;
	struct vfsmount *vfsmnt;
	struct mount *mnt;
	__u32 pos;
	__u32 done;
	__u32 user;
};

// path_step moves one dentry (or one mount) up: a bpf_loop callback, which
// the verifier checks once whatever the path's length.
static long path_step(__u32 i, struct path_walk *w)
{
	// Locals, not w's fields, go into BPF_CORE_READ: it would record a
	// CO-RE relocation for struct path_walk, which the kernel lacks.
	struct dentry *d = w->d;
	struct vfsmount *vfsmnt = w->vfsmnt;
	struct mount *mnt = w->mnt;
	struct scratch *s = get_scratch(w->user);
	if (!s)
		return 1;
	struct dentry *root = BPF_CORE_READ(vfsmnt, mnt_root);
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	if (d == root || d == parent) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);
		if (up == mnt) {
			w->done = 1;
			return 1;
		}
		w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		w->vfsmnt = (void *)up + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	__u32 len = BPF_CORE_READ(d, d_name.len);
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	if (len > NAME_MAX_LEN || len + 1 > w->pos)
		return 1;
	w->pos -= len;
	bpf_probe_read_kernel(&s->tmp[w->pos & (PATH_BUF - 1)], len & NAME_MAX_LEN, name);
	w->pos -= 1;
	s->tmp[w->pos & (PATH_BUF - 1)] = '/';
	w->d = parent;
	return 0;
}

// walk_path writes the path of f, from the root of the mount namespace,
// backwards into the scratch area's tmp: the kernel's d_path is not
// available to tracepoints. It returns where in tmp the path begins, and
// says in *done whether the walk finished (a path it could not finish is
// cut short).
static __always_inline __u64 walk_path(struct file *f, __u32 user, __u32 *done)
{
	struct path_walk w = {.pos = PATH_BUF, .user = user};
	w.d = BPF_CORE_READ(f, f_path.dentry);
	w.vfsmnt = BPF_CORE_READ(f, f_path.mnt);
	w.mnt = (void *)w.vfsmnt - bpf_core_field_offset(struct mount, mnt);
	bpf_loop(MAX_PATH_STEPS, path_step, &w, 0);
	*done = w.done;
	__u64 pos = w.pos;
	return pos > PATH_BUF ? PATH_BUF : pos;
}

// file_path writes the path of f into the scratch area's map event,
// forwards.
static __always_inline void file_path(struct file *f, struct scratch *s, __u32 user)
{
	__u32 done;
	__u64 pos = walk_path(f, user, &done);
	__u64 plen = PATH_BUF - pos;
	bpf_probe_read_kernel(s->map.path, plen, &s->tmp[pos & (PATH_BUF - 1)]);
	s->map.path_len = plen;
	if (!done)
		s->map.h.flags = 1;
}

// emit_vma sends the executable mapping emit_range put in the scratch area
// of user, whose file (if any) is at file_addr. Like the other functions
// below that are not inlined, it is a global function, which the verifier
// checks once rather than at every call site and loop iteration; the
// kernel pointers it is given are plain numbers, read with probe reads.
__attribute__((noinline)) int emit_vma(__u64 file_addr, __u64 aspace, __u64 epoch, __u32 user)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct scratch *s = get_scratch(user);
	if (!s)
		return -1;
	struct map_event *m = &s->map;
	header(&m->h, EV_MAP, task, aspace, epoch);
	m->path_len = 0;
	struct file *f = (void *)file_addr;
	if (f) {
		m->kind = MAP_FILE;
		m->ino = BPF_CORE_READ(f, f_inode, i_ino);
		m->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
		file_path(f, s, user);
	} else {
		m->kind = m->start == (__u64)task->mm->context.vdso ? MAP_VDSO : MAP_ANON;
		m->ino = 0;
		m->dev = 0;
	}
	__u64 size = sizeof(*m) - PATH_BUF + (__u64)m->path_len;
	if (size > sizeof(*m))
		size = sizeof(*m);
	output(m, size, LOST_MAP);
	return 0;
}

// EMIT, in emit_range's how, asks for the mappings to be sent, from the
// scratch area of the user in the bits above it.
#define EMIT 1
#define EMIT_FROM(user) (EMIT | (user) << 1)

// emit_range counts the executable mappings of the current task that meet
// [start, end), and sends them if how asks for it. It returns -1 if the
// address space was busy (its lock taken for writing).
__attribute__((noinline)) int emit_range(__u64 start, __u64 end, __u64 aspace, __u64 epoch, __u32 how)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 user = how >> 1;
	struct scratch *s = get_scratch(user);
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	int n = 0;

	if (!s)
		return -1;
	if (bpf_iter_task_vma_new(&it, task, start) != 0) {
		bpf_iter_task_vma_destroy(&it);
		return -1;
	}
	while ((vma = bpf_iter_task_vma_next(&it))) {
		if (vma->vm_start >= end)
			break;
		if (!(vma->vm_flags & VM_EXEC))
			continue;
		n++;
		if (!(how & EMIT))
			continue;
		__u64 file = 0;
		bpf_probe_read_kernel(&file, sizeof(file), &vma->vm_file);
		s->map.start = vma->vm_start;
		s->map.end = vma->vm_end;
		s->map.pgoff = vma->vm_pgoff;
		emit_vma(file, aspace, epoch, user);
	}
	bpf_iter_task_vma_destroy(&it);
	return n;
}

// new_aspace starts an address space user space has not seen (after exec,
// or once the LRU forgot it): every executable mapping it holds. If the
// address space was busy, the snapshot is marked failed and the next call
// tries again; this one gets epoch 0, which no path has.
static __always_inline __u64 new_aspace(struct task_struct *task, __u64 aspace)
{
	__u64 epoch = next_epoch();
	struct event_header h;
	header(&h, EV_ASPACE, task, aspace, epoch);
	output(&h, sizeof(h), LOST_OTHER);
	if (emit_range(0, ~0ull, aspace, epoch, EMIT_FROM(SCRATCH_ENTER)) < 0) {
		h.flags = 1;
		output(&h, sizeof(h), LOST_OTHER);
		return 0;
	}
	bpf_map_update_elem(&aspaces, &aspace, &epoch, BPF_ANY);
	return epoch;
}

static __always_inline __u32 record_nr(struct task_struct *task, long id)
{
	__u32 nr = id;
	if (task->thread_info.status & TS_COMPAT)
		nr |= I386_FLAG;
	return nr;
}

// reg_index returns the index in struct pt_regs (as 8-byte words) of a
// register by DWARF number (0 rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8 ..
// 15 r15), or NREGS for another number.
static __always_inline __u32 reg_index(__s64 reg)
{
	switch (reg) {
	case 0: return 10;
	case 1: return 12;
	case 2: return 11;
	case 3: return 5;
	case 4: return 13;
	case 5: return 14;
	case 6: return 4;
	case 7: return 19;
	case 8: return 9;
	case 9: return 8;
	case 10: return 7;
	case 11: return 6;
	case 12: return 3;
	case 13: return 2;
	case 14: return 1;
	case 15: return 0;
	default: return NREGS;
	}
}

// Indices in struct pt_regs of the instruction and stack pointers.
#define REG_IP 16
#define REG_SP 19

// input reads what node n asks for, from the registers regs and the
// current task's memory.
static __always_inline int input(struct node *n, __u64 *regs, __u64 *v)
{
	switch (n->kind) {
	case NODE_STACK:
		return bpf_probe_read_user(v, sizeof(*v), (void *)(regs[REG_SP] + n->arg));
	case NODE_MEMORY:
		return bpf_probe_read_user(v, sizeof(*v), (void *)n->arg);
	case NODE_REGISTER: {
		__u32 i = reg_index(n->arg);
		if (i >= NREGS)
			return -1;
		*v = regs[i];
		return 0;
	}
	}
	return -1;
}

static __always_inline void count(struct task_struct *task, __u32 compartment, __u32 nr, __u32 phase, __u64 aspace, __u64 epoch)
{
	struct count_key key = {.compartment = compartment, .nr = nr, .phase = phase};
	__u64 *n = bpf_map_lookup_elem(&counts, &key);
	if (n) {
		*n += 1;
		return;
	}
	__u64 one = 1;
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST) == 0)
		return;
	struct count_event ev = {.compartment = compartment, .nr = nr, .phase = phase};
	header(&ev.h, EV_COUNT, task, aspace, epoch);
	output(&ev, sizeof(ev), LOST_COUNT);
}

// vma_end, a bpf_find_vma callback, finds where the stack mapping ends.
static long vma_end(struct task_struct *task, struct vm_area_struct *vma, __u64 *end)
{
	*end = vma->vm_end;
	return 0;
}

// stack_copy is what copy_page copies: len bytes from sp.
struct stack_copy {
	__u64 sp;
	__u64 len;
};

// copy_page copies the i-th page the stack copy spans (the first and last
// may be partial), a bpf_loop callback. Stacks have holes, pages that
// cannot be read without a fault, which a tracepoint program cannot take:
// pages of a large local buffer not written yet (at start-up, ld.so's
// _dl_get_origin calls readlink with a 4 KiB buffer between the stack
// pointer and the frames, in stack never used before), pages swapped out,
// and, above the initial stack pointer, the gap exec leaves below the
// strings (arch_align_stack). So a page that cannot be read is marked in
// the event's holes and left zero, and the copy goes on above it, where
// frames may lie. All that changes from one page to the next is in the
// scratch area, nothing in c: the verifier checks the callback once,
// whatever stack_bytes is.
static long copy_page(__u32 i, struct stack_copy *c)
{
	struct scratch *s = get_scratch(SCRATCH_ENTER);
	if (!s)
		return 1;
	__u64 page = (c->sp & ~4095ull) + (__u64)i * 4096;
	__u64 from = page > c->sp ? page : c->sp;
	__u64 to = page + 4096;
	if (to > c->sp + c->len)
		to = c->sp + c->len;
	if (from >= to)
		return 1;
	__u64 off = from - c->sp;
	__u64 n = to - from;
	if (off >= STACK_BUF || n > 4096 || i >= 32)
		return 1;
	if (bpf_probe_read_user(&s->sys.stack[off], n, (void *)from) != 0)
		s->sys.holes |= 1u << i;
	return 0;
}

// emit_syscall sends a snapshot of the current task at system call entry:
// its registers, which on_sys_enter copied to the scratch area, and the top
// of its stack.
__attribute__((noinline)) int emit_syscall(__u32 nr, __u32 phase, __u64 aspace, __u64 epoch)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct scratch *s = get_scratch(SCRATCH_ENTER);
	if (!s) {
		count_lost(LOST_SYSCALL);
		return -1;
	}
	struct syscall_event *ev = &s->sys;
	header(&ev->h, EV_SYSCALL, task, aspace, epoch);
	ev->nr = nr;
	ev->phase = phase;
	__u64 sp = ev->regs[REG_SP];
	// The copy ends where the stack mapping does. bpf_find_vma needs the
	// address space's lock, which another thread may hold: then the copy
	// goes up to stack_bytes, beyond the stack if need be (no unwind reads
	// there; pages that cannot be read are holes).
	__u64 end = 0;
	__u64 len = stack_bytes;
	if (bpf_find_vma(task, sp, vma_end, &end, 0) == 0 && end > sp && end - sp < len)
		len = end - sp;
	// On the main thread's stack, frames end at the initial stack pointer
	// (argc): above it lie the arguments, the environment and the
	// auxiliary vector, which no unwind reads.
	__u64 start = task->mm->start_stack + 8;
	if (sp < start && start <= end && start - sp < len)
		len = start - sp;
	if (len > STACK_BUF)
		len = STACK_BUF;
	// One read if every page is there, else page by page (17 pages span
	// any 64 KiB).
	ev->holes = 0;
	if (bpf_probe_read_user(ev->stack, len, (void *)sp) != 0) {
		struct stack_copy c = {.sp = sp, .len = len};
		bpf_loop(STACK_BUF / 4096 + 1, copy_page, &c, 0);
	}
	ev->stack_len = len;
	__u64 size = sizeof(*ev) - STACK_BUF + len;
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	output(ev, size, LOST_SYSCALL);
	return 0;
}

// walk follows the paths trie from the call's instruction pointer, reading
// what each node asks for. At a leaf it counts the call under the leaf's
// compartment and returns 1; it returns 0 where the path is unknown.
__attribute__((noinline)) int walk(__u32 nr, __u32 phase, __u64 aspace, __u64 epoch)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct scratch *s = get_scratch(SCRATCH_ENTER);
	if (!s)
		return 0;
	struct node_key key = {.parent = ROOT | epoch, .value = s->sys.regs[REG_IP]};
	for (int i = 0; i < MAX_WALK_STEPS; i++) {
		struct node *n = bpf_map_lookup_elem(&paths, &key);
		if (!n)
			return 0;
		if (n->kind == NODE_LEAF) {
			count(task, n->id, nr, phase, aspace, epoch);
			return 1;
		}
		__u64 v;
		if (input(n, s->sys.regs, &v) != 0)
			return 0;
		key.parent = n->id;
		key.value = v;
	}
	return 0;
}

// note_mapping remembers, for sys_exit, the range a call that may change
// executable memory affects, and whether it held executable memory before.
static __always_inline void note_mapping(struct task_struct *task, __u64 regs, __u32 tid, __u32 nr)
{
	struct pending p = {.nr = nr};
	__u64 a[4];
	// di, si, dx, r10: the first four arguments.
	bpf_probe_read_kernel(&a[0], 8, (void *)(regs + 112));
	bpf_probe_read_kernel(&a[1], 8, (void *)(regs + 104));
	bpf_probe_read_kernel(&a[2], 8, (void *)(regs + 96));
	bpf_probe_read_kernel(&a[3], 8, (void *)(regs + 56));
	switch (nr) {
	case NR_MMAP:
		p.start = a[0];
		p.len = a[1];
		p.had_exec = (a[3] & MAP_FIXED) && emit_range(a[0], a[0] + a[1], 0, 0, 0) != 0;
		break;
	case NR_MPROTECT:
	case NR_PKEY_MPROTECT:
	case NR_MUNMAP:
	case NR_REMAP_FILE_PAGES:
		p.start = a[0];
		p.len = a[1];
		p.had_exec = emit_range(a[0], a[0] + a[1], 0, 0, 0) != 0;
		break;
	case NR_MREMAP:
		p.old_start = a[0];
		p.old_len = a[1];
		p.len = a[2];
		p.had_exec = emit_range(a[0], a[0] + a[1], 0, 0, 0) != 0;
		break;
	case NR_BRK:
		// The heap holds code only under READ_IMPLIES_EXEC; a shrinking
		// heap is checked for it, a growing one at exit.
		p.start = task->mm->brk;
		p.had_exec = a[0] < p.start && emit_range(a[0], p.start, 0, 0, 0) != 0;
		break;
	case NR_SHMDT:
		// The segment's size is not an argument: the whole mapping at
		// the address goes.
		p.start = a[0];
		p.len = 1;
		p.had_exec = emit_range(a[0], a[0] + 1, 0, 0, 0) != 0;
		break;
	case NR_SHMAT:
		break;
	default:
		return;
	}
	bpf_map_update_elem(&pendings, &tid, &p, BPF_ANY);
}

static __always_inline int is_mapping(__u32 nr)
{
	switch (nr) {
	case NR_MMAP:
	case NR_MPROTECT:
	case NR_MUNMAP:
	case NR_BRK:
	case NR_MREMAP:
	case NR_SHMAT:
	case NR_SHMDT:
	case NR_REMAP_FILE_PAGES:
	case NR_PKEY_MPROTECT:
		return 1;
	}
	return 0;
}

// serving_slot is where call nr (as record_nr numbers it) is in the
// serving_from map, or SERVING_SLOTS for a number no ABI has.
static __always_inline __u32 serving_slot(__u32 nr)
{
	__u32 base = 0;
	if (nr & I386_FLAG) {
		base = 2048;
		nr &= ~I386_FLAG;
	} else if (nr & X32_FLAG) {
		base = 1024;
		nr &= ~X32_FLAG;
	}
	return nr < 1024 ? base + nr : SERVING_SLOTS;
}

// start_serving marks the process tgid as serving and tells user space;
// born says it serves from its birth (its parent served).
static __always_inline void start_serving(struct task_struct *task, __u32 tgid, __u32 born)
{
	__u32 one = 1;
	if (bpf_map_update_elem(&serving, &tgid, &one, BPF_ANY) != 0) {
		count_lost(LOST_OTHER);
		return;
	}
	struct event_header h;
	header(&h, EV_SERVE, task, 0, 0);
	h.flags = born;
	output(&h, sizeof(h), LOST_OTHER);
}

// phase_of returns the phase of a call of nr, which may start its
// process's serving phase; traced is the thread's entry in the tasks map.
// A process never stops serving, so a thread that saw its process serve
// notes it in its entry and looks no further: once a process serves, its
// calls cost no lookup more than without phases. A lagging thread's calls
// serve from its birth.
static __always_inline __u32 phase_of(struct task_struct *task, __u32 *traced, __u32 nr)
{
	if (*traced == TASK_SERVING)
		return PHASE_SERVING;
	__u32 tgid = task->tgid;
	if (!bpf_map_lookup_elem(&serving, &tgid)) {
		__u32 slot = serving_slot(nr);
		__u32 *starts = bpf_map_lookup_elem(&serving_from, &slot);
		if (!starts || !*starts)
			return *traced == TASK_LAGGING ? PHASE_SERVING : PHASE_STARTING;
		start_serving(task, tgid, 0);
	}
	*traced = TASK_SERVING;
	return PHASE_SERVING;
}

SEC("tp_btf/sys_enter")
int on_sys_enter(__u64 *ctx)
{
	__u32 tid = bpf_get_current_pid_tgid();
	__u32 *traced = bpf_map_lookup_elem(&tasks, &tid);
	if (!traced)
		return 0;

	struct task_struct *task = bpf_get_current_task_btf();
	__u64 regs = ctx[0];
	__u32 nr = record_nr(task, ctx[1]);
	__u32 phase = phases ? phase_of(task, traced, nr) : PHASE_STARTING;
	__u64 aspace = task->mm->context.ctx_id;
	__u64 epoch;
	__u64 *known = bpf_map_lookup_elem(&aspaces, &aspace);
	if (known)
		epoch = *known;
	else
		epoch = new_aspace(task, aspace);

	if (is_mapping(nr))
		note_mapping(task, regs, tid, nr);

	// The registers go to the scratch area, where walk and emit_syscall
	// read them: global functions cannot take the kernel's pointer.
	struct scratch *s = get_scratch(SCRATCH_ENTER);
	if (!s) {
		count_lost(LOST_SYSCALL);
		return 0;
	}
	bpf_probe_read_kernel(s->sys.regs, sizeof(s->sys.regs), (void *)regs);
	if (epoch != 0 && walk(nr, phase, aspace, epoch))
		return 0;
	emit_syscall(nr, phase, aspace, epoch);
	return 0;
}

// changed_range returns the range a finished mapping call affected.
static __always_inline void changed_range(struct pending *p, __u64 ret, __u64 *start, __u64 *end)
{
	switch (p->nr) {
	case NR_MMAP:
		*start = ret;
		*end = ret + p->len;
		break;
	case NR_MREMAP:
		*start = ret;
		*end = ret + p->len;
		break;
	case NR_BRK:
		*start = p->start < ret ? p->start : ret;
		*end = p->start < ret ? ret : p->start;
		break;
	case NR_SHMAT:
		*start = ret;
		*end = ret + 1;
		break;
	default:
		*start = p->start;
		*end = p->start + p->len;
	}
}

SEC("tp_btf/sys_exit")
int on_sys_exit(__u64 *ctx)
{
	__u32 tid = bpf_get_current_pid_tgid();
	struct pending *pp = bpf_map_lookup_elem(&pendings, &tid);
	if (!pp)
		return 0;
	struct pending p = *pp;
	bpf_map_delete_elem(&pendings, &tid);
	__u64 ret = ctx[1];
	if (ret >= (__u64)-MAX_ERRNO)
		return 0;

	struct task_struct *task = bpf_get_current_task_btf();
	__u64 aspace = task->mm->context.ctx_id;
	__u64 start, end;
	changed_range(&p, ret, &start, &end);
	int now = emit_range(start, end, 0, 0, SCRATCH_EXIT << 1);
	if (!p.had_exec && now == 0)
		return 0;

	// The mappings change first, then the epoch: a call that reads the
	// new epoch is queued after the mappings it may depend on.
	__u64 epoch = next_epoch();
	struct unmap_event u = {.start = start, .end = end};
	header(&u.h, EV_UNMAP, task, aspace, epoch);
	if (p.nr == NR_MREMAP) {
		struct unmap_event old = {.start = p.old_start, .end = p.old_start + p.old_len};
		header(&old.h, EV_UNMAP, task, aspace, epoch);
		output(&old, sizeof(old), LOST_MAP);
	}
	output(&u, sizeof(u), LOST_MAP);
	if (emit_range(start, end, aspace, epoch, EMIT_FROM(SCRATCH_EXIT)) < 0) {
		// Another thread held the address space: forget it, so that
		// the next call of any of its threads lists it whole again
		// (new_aspace), before that call's own event.
		u.h.flags = 1;
		output(&u, sizeof(u), LOST_MAP);
		bpf_map_delete_elem(&aspaces, &aspace);
		return 0;
	}
	bpf_map_update_elem(&aspaces, &aspace, &epoch, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int on_fork(__u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0];
	struct task_struct *child = (void *)ctx[1];
	__u32 ptid = parent->pid;
	if (!bpf_map_lookup_elem(&tasks, &ptid))
		return 0;
	__u32 ctid = child->pid;
	__u32 ptgid = parent->tgid;
	__u32 entry = TASK_TRACED;
	if (phases && child->tgid == ptgid && !bpf_map_lookup_elem(&serving, &ptgid))
		entry = TASK_LAGGING;
	if (bpf_map_update_elem(&tasks, &ctid, &entry, BPF_NOEXIST) != 0) {
		count_lost(LOST_TASK);
		return 0;
	}
	__u64 paspace = parent->mm->context.ctx_id;
	__u64 caspace = child->mm->context.ctx_id;
	__u64 *epoch = bpf_map_lookup_elem(&aspaces, &paspace);
	struct fork_event ev = {.child_tid = ctid, .child_tgid = child->tgid, .child_aspace = caspace};
	header(&ev.h, EV_FORK, parent, paspace, epoch ? *epoch : 0);
	// A copied address space holds what its parent's does: it shares the
	// parent's epoch, and so what was learnt of its paths, until either
	// changes its executable memory.
	if (caspace != paspace && epoch)
		bpf_map_update_elem(&aspaces, &caspace, epoch, BPF_NOEXIST);
	output(&ev, sizeof(ev), LOST_OTHER);
	// A new process serves if its parent does, at this moment: the
	// child has not run yet.
	if (phases && child->tgid != ptgid && bpf_map_lookup_elem(&serving, &ptgid))
		start_serving(child, child->tgid, 1);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 old = ctx[1];
	if (!bpf_map_lookup_elem(&tasks, &old))
		return 0;
	__u32 tid = p->pid;
	if (tid != old) {
		__u32 entry = TASK_TRACED;
		bpf_map_update_elem(&tasks, &tid, &entry, BPF_ANY);
		bpf_map_delete_elem(&tasks, &old);
	}
	struct scratch *s = get_scratch(SCRATCH_EXEC);
	if (!s) {
		count_lost(LOST_OTHER);
		return 0;
	}
	struct exec_event *ev = &s->exec;
	header(&ev->h, EV_EXEC, p, p->mm->context.ctx_id, 0);
	ev->old_tid = old;
	// The program the image runs: the file the new address space
	// executes, by its path from the root (the ELF file; for a #! script,
	// the interpreter the kernel started), not the name the caller passed,
	// which may be relative to its working directory or a script.
	__u32 done;
	__u64 pos = walk_path(BPF_CORE_READ(p, mm, exe_file), SCRATCH_EXEC, &done);
	__u64 plen = PATH_BUF - pos;
	bpf_probe_read_kernel(ev->filename, plen, &s->tmp[pos & (PATH_BUF - 1)]);
	ev->filename_len = plen;
	if (!done)
		ev->h.flags = 1;
	__u64 size = sizeof(*ev) - PATH_BUF + (__u64)ev->filename_len;
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	output(ev, size, LOST_OTHER);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int on_exit(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 tid = p->pid;
	if (!bpf_map_lookup_elem(&tasks, &tid))
		return 0;
	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&pendings, &tid);
	if (phases && (__u8)ctx[1]) {
		__u32 tgid = p->tgid;
		bpf_map_delete_elem(&serving, &tgid);
	}
	struct exit_event ev = {.group_dead = (__u8)ctx[1]};
	header(&ev.h, EV_EXIT, p, 0, 0);
	output(&ev, sizeof(ev), LOST_OTHER);
	return 0;
}

// Anchors that keep the types user space decodes in the object's BTF, from
// which bpf2go generates their Go counterparts.
const struct syscall_event *unused_syscall_event __attribute__((unused));
const struct map_event *unused_map_event __attribute__((unused));
const struct unmap_event *unused_unmap_event __attribute__((unused));
const struct fork_event *unused_fork_event __attribute__((unused));
const struct exec_event *unused_exec_event __attribute__((unused));
const struct exit_event *unused_exit_event __attribute__((unused));
const struct count_event *unused_count_event __attribute__((unused));
const enum event_type *unused_event_type __attribute__((unused));
const enum map_kind *unused_map_kind __attribute__((unused));
const enum node_kind *unused_node_kind __attribute__((unused));
const enum lost_reason *unused_lost_reason __attribute__((unused));
const enum scratch_user *unused_scratch_user __attribute__((unused));
const enum phase *unused_phase __attribute__((unused));
