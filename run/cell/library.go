package cell

import (
	"os/exec"
	"path/filepath"
)

// LibraryName is the audit library's file name. `make build` puts it next
// to the syscell binary.
const LibraryName = "libsyscell-audit.so"

// LibraryPath returns where the audit library lies for the syscell binary
// exe.
func LibraryPath(exe string) string {
	return filepath.Join(filepath.Dir(exe), LibraryName)
}

// BuildLibrary compiles the audit library from srcDir (the repository's
// audit directory) into out with the C compiler cc, through
// srcDir/build.sh, the one place its flags live. It returns the
// compiler's diagnostics, which are empty for a clean build.
func BuildLibrary(srcDir, out, cc string) (string, error) {
	cmd := exec.Command("sh", filepath.Join(srcDir, "build.sh"), out, cc)
	diag, err := cmd.CombinedOutput()
	return string(diag), err
}
