// Package notify is the supervisor's side of seccomp user notification.
//
// A filter that returns SECCOMP_RET_USER_NOTIF suspends the calling thread
// and queues the call on the filter's listener, a file descriptor that
// filter.Install returns when given filter.FlagNewListener. A supervisor
// holding the listener receives each suspended call (Listener.Receive), may
// ask whether it is still pending (Listener.Valid), and answers it
// (Listener.Respond): with a return value, with an errno, or by letting the
// kernel run it (Response.Continue).
//
// The package knows nothing of policies: it moves notifications and
// answers, and leaves the decisions to its callers, the run supervisor of
// package enforce among them.
//
// # What the kernel guarantees
//
// The call is suspended before it runs, so an errno answer denies it. A
// continued call, though, runs with whatever its pointer arguments point to
// when the kernel resumes it, which another thread of the caller may have
// changed since the supervisor looked: Continue is sound for a decision
// made from the registers alone (number, ABI, instruction pointer, argument
// values), never for one made from memory the caller can write.
//
// When the listener is closed, or the supervisor dies, every pending and
// later notified call fails with ENOSYS. Once every task using the filter has
// exited, Receive reports ErrNoTasks.
package notify
