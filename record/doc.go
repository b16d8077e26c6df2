// Package record runs a program under the recorder (package trace),
// attributes each of its system calls to a compartment with the rule of
// package attribute, and turns the outcome into a policy: one compartment
// per object that made calls, each with its calls and how many, and their
// union as the rules. Recordings of several runs merge into one policy.
//
// The work is split with the kernel. A call whose path the kernel does not
// know arrives as a snapshot (registers and the top of the stack), is
// unwound here, and its path is taught back (trace.Tracer.Learn); the
// kernel counts later calls of the same path itself. Nothing is guessed: a
// call that cannot be attributed, and an event the kernel could not
// deliver, is counted and reported, and makes the recording lossy.
//
// A recording may tell phases apart (phases.go): the calls each
// compartment made once its process served, from the first call of a
// server's serving loop, as well as all of them.
package record
