package mech

import (
	"fmt"
	"os"
	"testing"

	"github.com/syscell/syscell/run/cell"
)

// TestMain builds syscell's audit library next to the test binary, where
// the supervised mechanism's cell.Run finds it, as it finds it next to
// syscell.
func TestMain(m *testing.M) {
	exe, err := os.Executable()
	if err == nil {
		var diag string
		diag, err = cell.BuildLibrary("../../audit", cell.LibraryPath(exe), "gcc")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, diag)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the audit library (scripts/install-deps.sh installs gcc): %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
