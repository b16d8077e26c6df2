package cell

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadEnvironment reads, from this very process, a NULL-terminated
// array of strings as an exec's environment is: short strings, one longer
// than a batch's first read, one ending at a page's end, and more
// pointers than a batch holds, and one longer than a variable may be.
func TestReadEnvironment(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	// The second page unreadable, and a string that ends just before it.
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	edge := "EDGE=end"
	copy(mem[page-len(edge)-1:], edge+"\x00")

	var want []string
	var keep [][]byte
	var ptrs []uint64
	add := func(s string) {
		b := append([]byte(s), 0)
		keep = append(keep, b)
		want = append(want, s)
		ptrs = append(ptrs, uint64(uintptr(unsafe.Pointer(&b[0]))))
	}
	add("HOME=/root")
	add("LONG=" + strings.Repeat("x", 1000))
	// An environment block, as an exec's usually is, with a variable
	// longer than a variable may be, of which its first maxEnvVar bytes
	// are read.
	huge := "HUGE=" + strings.Repeat("z", 2*maxEnvVar)
	block := []byte("A=1\x00" + huge + "\x00B=2\x00")
	keep = append(keep, block)
	for _, at := range []int{0, 4, 5 + len(huge)} {
		ptrs = append(ptrs, uint64(uintptr(unsafe.Pointer(&block[at]))))
	}
	want = append(want, "A=1", huge[:maxEnvVar], "B=2")
	want = append(want, edge)
	ptrs = append(ptrs, uint64(uintptr(unsafe.Pointer(&mem[page-len(edge)-1]))))
	for i := range 2 * wordBatch {
		add("V" + strings.Repeat("y", i%7) + "=1")
	}
	array := append(ptrs, 0)
	tid := os.Getpid()
	words, err := readWords(tid, uint64(uintptr(unsafe.Pointer(&array[0]))), maxEnv)
	if err != nil || len(words) != len(ptrs) {
		t.Fatalf("read %d words, %v; want %d", len(words), err, len(ptrs))
	}
	got, err := readStrings(tid, words, maxEnvVar)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("string %d: %.40q, want %.40q", i, got[i], want[i])
		}
	}
	// A string in the unreadable page is a fault.
	if _, err := readStrings(tid, []uint64{uint64(uintptr(unsafe.Pointer(&mem[page])))}, maxEnvVar); err == nil {
		t.Error("read a string from an unreadable page")
	}
	runtime.KeepAlive(keep)
	runtime.KeepAlive(array)
}
