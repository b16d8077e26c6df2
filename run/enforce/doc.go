// Package enforce runs a command under a policy: the compiled whole-process
// filter is installed before the command's first instruction, and every
// thread and child of the command inherits it.
//
// # Modes
//
// In Enforce mode the kernel gives denied calls the policy's own actions.
// In Audit mode nothing is denied: the program's denying returns become
// SECCOMP_RET_USER_NOTIF, and the supervisor (the process that called Run)
// records each call, its count and first instruction pointer, and lets the
// kernel run it. Complain mode is audit, except that the supervisor fails
// the call: with the policy's errno where it has one, with ENOSYS where the
// policy traces or notifies (what the kernel does when no tracer or
// supervisor listens), and with EPERM where the policy kills or traps.
//
// # The shim
//
// Run starts the shim: syscell-shim (run/enforce/shim/src/shim.c) where it lies
// next to the running binary, else a copy of the running binary itself,
// which must call MaybeRunShim first thing in main; it starts it while the
// policy compiles, and sends it the program. The shim
// sets no_new_privs, installs the program, and execve(2)s the command, so
// the command's first instruction already runs filtered. Every descriptor
// of the shim but the standard streams is close-on-exec by then: its own,
// the notification listener included, and any the caller of Run inherited
// without the flag. The command gets the standard streams only.
//
// The shim installs the program on the thread that calls execve, without
// SECCOMP_FILTER_FLAG_TSYNC. The other threads of the shim (the Go shim's
// runtime, the C shim's voice) stay unfiltered until execve kills them,
// so their own system calls (sysmon's nanosleep and futex among them)
// cannot trip a policy that denies them:
// with TSYNC, a policy killing on nanosleep and futex killed about a third of
// the launches before the command started. The command is the exec'ing
// thread, so it and every thread and process it creates carry the filter.
// Between the install and execve that thread makes raw system calls only.
//
// With a listener, an unfiltered thread of the shim hands it to the
// supervisor over a socket (SCM_RIGHTS): the filtered thread could not
// itself, since the policy may deny sendmsg, and in audit mode the denied
// sendmsg would wait for a supervisor that has no listener yet.
//
// # execve under the filter
//
// The shim's execve runs under the policy, and a policy may deny execve.
// So whenever the supervisor listens (audit, complain, or enforce with a
// policy that denies x86_64 execve for any arguments) the kernel's program
// sends every x86_64 execve to the supervisor (the gate). The supervisor
// lets the first one run, after checking that it comes from the shim's
// thread: before the shim's exec only that thread is filtered, and its only
// filtered call is execve, so the first notification can be no other. Every
// later execve is the command's, and the supervisor decides it by the
// policy (policy.Resolved.Decide over the registers, exactly what the
// program would decide). A continued execve runs with arguments that the
// shim's own code could change, but nothing else runs in the shim.
//
// A notification cannot kill: where the policy kills or traps on execve,
// the supervisor kills the command's process with SIGKILL while the call is
// suspended, so the call never runs, and Result.KilledFor names it.
//
// # What the supervisor cannot do
//
// The kernel's own kills (Enforce mode, the policy's kill-process) reach the
// supervisor only as the command's death by SIGSYS: no notification tells
// which call it was, and a supervisor-made kill would make enforcement
// depend on the supervisor staying alive. Run reports the signal; Complain
// mode names the calls.
//
// The supervisor answers until the command exits, then closes the listener:
// from then on, and if the supervisor dies, every notified call of processes
// the command left behind fails with ENOSYS.
package enforce
