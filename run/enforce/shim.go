package enforce

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/syscell/syscell/run/enforce/shim"
)

// ShimEnv is the environment variable that makes a binary started by Run
// play the shim.
const ShimEnv = shim.Env

// ShimName is the shim's own binary, a C program (shim/src/shim.c), which
// Run starts where it lies next to the running binary: it starts faster
// than a Go binary, syscell's own.
const ShimName = "syscell-shim"

// BuildShim builds the shim's own binary at out with the C compiler cc,
// through build.sh in srcDir (the directory of package run/enforce/shim),
// and returns what the compiler said.
func BuildShim(srcDir, out, cc string) (string, error) {
	diag, err := exec.Command("sh", filepath.Join(srcDir, "build.sh"), out, cc).CombinedOutput()
	return string(diag), err
}

// MaybeRunShim returns at once unless Run started this process as its
// shim; then it installs the filter and executes the command, or reports
// why it could not, and never returns (shim.MaybeRun). Call it first
// thing in main (in TestMain for a test binary): whatever runs before it
// runs in every shim too.
func MaybeRunShim() { shim.MaybeRun() }

// shimPath is the binary Run starts as the shim for the running binary
// exe: ShimName next to it where there is such an executable file, else
// exe itself, which must call MaybeRunShim.
func shimPath(exe string) string {
	own := filepath.Join(filepath.Dir(exe), ShimName)
	if info, err := os.Stat(own); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
		return own
	}
	return exe
}
