// Package attribute decides which object of a process asked for a system
// call: the rule that syscell's recorder and its enforcement supervisor
// share.
//
// The rule: a system call belongs to the innermost stack frame whose code
// lies outside the system runtime (libc, the dynamic loader, libpthread,
// librt and libdl where they are separate, and the vDSO), that is, to the
// object that asked the runtime for it. A syscall instruction an object
// executes itself belongs to that object. A call the runtime makes with no
// caller outside it (start-up, exit) belongs to the runtime. Code in
// anonymous executable memory (JIT) is a compartment of its own. The C
// runtime start code linked into every executable (the function at its
// ELF entry point, crt1's _start) hands control to libc and asks for
// nothing, so it counts as runtime.
//
// An Object is a file mapped for execution, identified by its device,
// inode and GNU build-id, with its path for humans; Objects loads and
// keeps them. A Space is one address space: which object is mapped where,
// built from /proc/PID/maps (ReadMaps) or from mapping events. Attribute
// unwinds a thread stopped at system call entry through the runtime's
// frames, with the objects' CFI (package unwind), until the rule decides.
package attribute
