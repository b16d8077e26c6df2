package attribute

// Runtime is the set of sonames of the system runtime's libraries. The
// vDSO always belongs to the runtime.
type Runtime map[string]bool

// DefaultRuntime is glibc's runtime (libc, the x86_64 dynamic loader, and
// the libraries glibc 2.34 merged into libc, which older systems still load
// separately) and musl's, whose libc is also its loader.
func DefaultRuntime() Runtime {
	return Runtime{
		"libc.so.6":             true,
		"ld-linux-x86-64.so.2":  true,
		"libpthread.so.0":       true,
		"librt.so.1":            true,
		"libdl.so.2":            true,
		"libc.musl-x86_64.so.1": true,
	}
}

// Contains says whether soname names a runtime library.
func (r Runtime) Contains(soname string) bool { return soname != "" && r[soname] }
