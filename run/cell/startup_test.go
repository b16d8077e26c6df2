package cell

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/notify"
)

// TestWriteExecutable checks that the answer to a bound mark writes the
// caller's executable where the mark says, as its own readlink of
// /proc/self/exe reads it, and nothing where it would not fit.
func TestWriteExecutable(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		size int
		want string
	}{
		{"room for it", 4096, exe},
		{"no room for its terminating NUL", len(exe), ""},
		{"not asked", 0, ""},
	} {
		buf := make([]byte, 4096)
		at := uint64(uintptr(unsafe.Pointer(&buf[0])))
		if tt.size == 0 {
			at = 0
		}
		n := &notify.Notification{Pid: os.Getpid(), Data: bpf.SeccompData{Args: [6]uint64{0, at, uint64(tt.size)}}}
		writeExecutable(n)
		if got := string(buf[:bytes.IndexByte(buf, 0)]); got != tt.want {
			t.Errorf("%s: wrote %q, want %q", tt.name, got, tt.want)
		}
	}
}
