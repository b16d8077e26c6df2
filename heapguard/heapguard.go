// Package heapguard locates, builds and describes syscell's use-after-free
// hardening allocator: a C library (this directory's .c files) that a
// program loads with LD_PRELOAD, and that `syscell run --heap-guard`
// preloads. The C sources are in src/, the design in README.md.
package heapguard

import (
	_ "embed"
	"os/exec"
	"path/filepath"
	"strings"
)

// LibraryName is the built library's file name. `make build` puts it next
// to the syscell binary.
const LibraryName = "libsyscell-heapguard.so"

// ModeEnv is the environment variable that chooses the guard's mode in a
// program it is preloaded into; unset, the mode is Strict.
const ModeEnv = "SYSCELL_HEAPGUARD"

// The guard's modes. Strict revokes every object when it is freed: any
// later use faults. Deferred never hands an address out twice and revokes
// memory in bounded batches once every object in it is dead.
const (
	Strict   = "strict"
	Deferred = "deferred"
)

// Modes lists the values ModeEnv takes.
func Modes() []string {
	return []string{Strict, Deferred}
}

//go:embed syscalls.txt
var syscallsTxt string

// Syscalls returns the system calls the guard itself makes (x86_64 names):
// a policy applied to a guarded program must allow all of them.
func Syscalls() []string {
	return strings.Fields(syscallsTxt)
}

// LibraryPath returns where the library lies for the syscell binary exe.
func LibraryPath(exe string) string {
	return filepath.Join(filepath.Dir(exe), LibraryName)
}

// Build compiles the library from srcDir (this package's directory) into out with the
// C compiler cc, through srcDir/build.sh (the one place its flags live).
// It returns the compiler's diagnostics, which are empty for a clean build.
func Build(srcDir, out, cc string) (string, error) {
	cmd := exec.Command("sh", filepath.Join(srcDir, "build.sh"), out, cc)
	diag, err := cmd.CombinedOutput()
	return string(diag), err
}
