// Package cell runs a program with per-library system-call allowlists,
// the compartments of a policy, enforced before each call runs by one
// seccomp filter over the call's number and instruction pointer.
//
// # Start
//
// Run starts the program with syscell's audit library (audit/, loaded
// with LD_AUDIT, set in the program's environment only) and a socket
// to it. Before the loader maps the program's libraries, the library
// greets the launcher with the size of its stub block; the launcher
// picks the stub window (a random 4 GiB-aligned region, one slot per
// compartment in policy order) and sends it with how each compartment
// names its objects and which system calls depend on the caller. As the
// loader opens objects, the library tells which compartment each belongs
// to and binds a compartment's calls of libc's wrappers to the stubs in
// its slot. Once every object is loaded and relocated, before any
// constructor runs, it reports the layout (each compartment's code, the
// runtime's code); Run compiles compile.Compartments(compartment.NewSpec)
// for it and sends the program, which the library installs on every
// thread (NO_NEW_PRIVS, NEW_LISTENER|TSYNC|TSYNC_ESRCH); a helper process
// the library started just before hands Run the listener. Whatever fails
// on the way, the library says why on the program's standard error and
// exits: the program never runs without its filter.
//
// # Supervision
//
// The filter decides in the kernel every call that does not depend on the
// caller, and every call made from a stub or from a compartment's own
// code. The rest, calls made from the runtime's code (libc's stdio, the
// loader) or from code the layout does not know (a library loaded later,
// an image the program executed), wait for the supervisor: it reads where
// the thread stopped (/proc/TID/syscall) and the top of its stack
// (process_vm_readv), unwinds it with the objects' CFI (package unwind),
// applies the attribution rule (package attribute), and answers with the
// owner's verdict while the call waits, after checking that the
// notification is still pending. Where an unwind needs a register a
// notification does not carry, the supervisor reads the thread's
// registers with ptrace, which makes the kernel withdraw the notification
// and notify the call again. Owners are cached per call chain, and the
// calls the supervisor decided are counted (Result.Supervised). If the
// supervisor dies, the listener closes and those calls fail with ENOSYS.
//
// # Threads, fork, dlopen, exec
//
// Threads and children inherit the filter and the layout. Objects loaded
// later get the stubs of their compartment's slot (every compartment has
// one from the start); their own code is unknown to the filter, so its
// calls are supervised. An image the program executes keeps the filter
// and its layout: the audit library, inherited with the environment,
// finds what the first image left for it there, maps the stub window
// where it was, reserves the code ranges the filter attributes to
// compartments, and refuses to run an object whose code lies in another
// compartment's range. Every exec is supervised, and one whose
// environment drops the audit library, or that starts a statically
// linked program, fails with EPERM.
//
// # Modes
//
// Options.Mode is what happens to the calls the policy stops, as for a
// whole-process policy (package enforce): Enforce gives them the policy's
// action, in the kernel where the filter decides; Audit and Complain have
// the filter notify every one of them, and the supervisor counts each by
// who made it (Result.Denied) and lets it run (Audit) or fails it with an
// errno (Complain).
package cell
