// Package ociruntime is syscell as an OCI runtime: a shim that podman
// (--runtime), Docker ("runtimes" in daemon.json) and Kubernetes (a
// RuntimeClass whose handler containerd or CRI-O maps to it) call as
// they call runc, and that hands every command to runc or crun (the
// delegate) for the work of running containers.
//
// A container whose annotations ask nothing of syscell (Annotations) is
// the delegate's alone: every command is executed as the delegate with
// the same arguments, the bundle untouched. For a container whose
// annotation names a policy, create adds to the bundle's config.json
// what per-library enforcement needs, with the runtime-spec types: a
// read-only bind mount of the supervisor's shared directory (the audit
// library and the socket programs connect to) and the environment
// package supervisor returns (LD_AUDIT, the socket, the room for
// executed images, GLIBC_TUNABLES). The container's own seccomp profile
// stays, the outer bound: the per-library filter stacks under it. Once
// the delegate has created the container, the shim checks that the
// loader will load the audit library into the container's program (not
// statically linked, not raising privileges) and tells the supervisor
// the container's init process; whatever fails, the container is
// deleted and create fails. A container whose annotation asks for a
// recording is created unchanged, and recorded by the supervisor from
// its program's first instruction.
//
// The supervisor is started on first use when none runs (a systemd unit
// or a Kubernetes DaemonSet may start it instead). A container created
// while no supervisor listens, or whose supervisor dies, fails closed:
// its program cannot start, its supervised calls fail with ENOSYS.
package ociruntime
