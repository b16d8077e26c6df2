// Package supervisor is syscell's long-running supervisor for containers:
// one process per machine (a node of a cluster) that supervises the
// per-library filters of every container the OCI runtime shim (package
// ociruntime) started under a policy, and records the containers it was
// asked to record.
//
// # Sockets
//
// The supervisor keeps its state in one directory (DefaultDir), readable
// by root alone, with the control socket through which the runtime
// registers containers. Its shared subdirectory is mounted read-only into
// every supervised container (at ContainerDir): it holds the audit
// library and the socket the programs connect to. A container's
// environment (cell.Environment) has the loader load the library, which
// connects to that socket before the program's first object is loaded;
// the supervisor authenticates the connection, finds the container's
// policy, and hands the connection to cell.Supervise, the same
// conversation, filter and supervisor as syscell run's.
//
// # Who a program is
//
// A program is known by the kernel's word, never by what it says: the
// socket's peer credentials give its process (SO_PEERCRED, and where the
// kernel has it SO_PEERPIDFD, a pidfd taken at connect time that tells
// whether the pid still names that process once its identity is read).
// Its identity is its PID namespace and its cgroups: it belongs to the
// registered container whose init process has the same PID namespace and
// whose cgroups hold its own. A process can change neither without
// privileges its container does not give it, so a program in one
// container cannot speak for another. A program that belongs to no
// registered container is refused, and exits: the audit library never
// runs a program without its filter.
//
// # How policies arrive
//
// At create, the runtime names the policy the container's annotation
// names; the supervisor reads it from its policy directory (a name, not a
// path: a container cannot make the supervisor read any file of the
// host), checks it, keeps a copy for the container's lifetime, and
// returns the environment the container's process needs. Once the
// runtime has created the container, it tells the supervisor the pid of
// its init process, whose namespace and cgroups are recorded. Containers
// are written to the state directory, so that a supervisor started again
// serves the containers registered before it.
//
// # Failing closed
//
// If the supervisor dies, every listener it held closes and the calls
// the filters send to it fail with ENOSYS: none runs unsupervised. A
// program that starts while no supervisor listens cannot connect, and
// exits before its first instruction.
package supervisor
