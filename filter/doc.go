// Package filter is the only place in syscell that installs seccomp programs
// into the kernel. It attaches programs (Install), probes what the running
// kernel supports (Supported, FlagsSupported, ActionAvailable) and runs code
// under a filter in a child process, so that tests and benchmarks can watch
// the kernel enforce a program without filtering themselves.
//
// # Child processes
//
// Go cannot fork without exec: the child of a fork holds one thread of a
// multi-threaded runtime. A filtered child is therefore a fresh copy of the
// running binary, started by Child.Run with the environment variable
// ChildEnv naming a role. Every binary that may be re-executed this way must
// call MaybeRunChild first thing in main (for a test binary, in TestMain):
//
//	func main() {
//		filter.MaybeRunChild()
//		...
//	}
//
// In the parent MaybeRunChild returns at once. In a child it runs the role's
// ChildFunc, registered by RegisterChild from an init function, and exits.
// The request reaches the child as JSON on its standard input; the reply
// comes back through memory shared with the parent, so a child can report
// even when its filter denies write(2), and the parent stops waiting as soon
// as the reply is complete, even when the filter denies exit_group(2).
//
// This package registers the role behind Child.Probe, which makes a list of
// system calls under a program and reports what each returned; package
// bench/sec registers its measuring role the same way.
package filter
