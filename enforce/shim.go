package enforce

import (
	"os"
	"path/filepath"

	"github.com/syscell/syscell/enforce/shim"
)

// ShimEnv is the environment variable that makes a binary started by Run
// play the shim.
const ShimEnv = shim.Env

// ShimName is the shim's own binary (cmd/syscell-shim), which Run starts
// where it lies next to the running binary: it starts faster than a
// binary with more to initialize, syscell's own.
const ShimName = "syscell-shim"

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
