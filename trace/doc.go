// Package trace is the recorder's kernel side: an eBPF program at the
// sys_enter tracepoint (recorder.c) that, for every system call of the
// traced tasks, sends user space what it needs to attribute the call, and
// follows the tasks through fork, exec and exit.
//
// What a call is sent as: the registers and a copy of the top of the user
// stack (a Syscall event), which user space unwinds with the objects' CFI.
// Pages of the stack the program cannot read without a fault (a buffer
// not written yet, a page swapped out) are holes in the copy, which goes
// on above them.
// Once user space has attributed a call, it teaches the program the call's
// path (Tracer.Learn): the instruction pointer and each value the unwind
// read, in order, ending in the compartment. A later call that reads the
// same values is counted in the kernel under that compartment and sends
// nothing. Because the unwind is a function of exactly those values (see
// unwind.Cursor.Inputs), the in-kernel count attributes exactly as user
// space would; a path that differs anywhere falls back to a snapshot.
//
// What user space must know to unwind: the executable mappings of each
// address space (Map and Unmap events, with the file's device, inode and
// path, read in the kernel when the mapping changes, so a process that has
// exited since is still understood), and an epoch per address space that
// changes whenever its executable memory does, so that paths learnt before
// a change are never used after it. A forked child shares its parent's
// epoch, and what was learnt, until either changes.
//
// Phases, where Options.ServingFrom asks for them: a process (thread
// group) serves from its own first call of one of those numbers, which is
// made while serving, or from its birth when a process that serves forks
// it; its threads share its phase, and it keeps it across execve. A
// thread the process started while starting lags: its calls count as made
// while serving from its birth, since in another run the scheduler may
// run them after its process served. The kernel keeps each process's
// phase (Serve events say when one starts), and every call it counts and
// every snapshot carries the phase, so that counts and attribution agree
// on it.
//
// Tracing starts at a task user space names (Tracer.Trace) and covers every
// task it creates from then on. Tracer.Start starts a command stopped
// after its execve, so that its first instruction is traced.
//
// The compiled program and its Go bindings (recorder_bpfe[lb].*) are
// generated and committed, so that building syscell needs no clang. After
// changing recorder.c, run go generate in this directory (clang and
// libbpf-dev).
package trace
