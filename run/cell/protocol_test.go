package cell

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/policy"
)

// socketPair returns the launcher's channel and the library's end.
func socketPair(t *testing.T) (*channel, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours := os.NewFile(uintptr(fds[0]), "launcher")
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		t.Fatal(err)
	}
	lib := os.NewFile(uintptr(fds[1]), "library")
	t.Cleanup(func() { conn.Close(); lib.Close() })
	return newChannel(conn.(*net.UnixConn)), lib
}

// TestConversation plays the audit library's side of a start.
func TestConversation(t *testing.T) {
	ch, lib := socketPair(t)
	ids, err := newIdentities(&policy.Policy{Compartments: []policy.Compartment{{Name: "prog"}, {Name: "libx.so", BuildID: "ABCD"}}})
	if err != nil {
		t.Fatal(err)
	}
	lib.WriteString("hello 2 7193\n")
	if block, err := ch.hello(); err != nil || block != 7193 {
		t.Fatalf("hello: %d, %v", block, err)
	}
	win := window{base: 0x6000_0000_0000, shift: 13, slots: 2}
	cfg := config{window: win, ids: ids, runtime: []string{"libc.so.6"}, stubs: []uint32{39, 83}}
	if err := ch.sendConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(lib)
	var got []string
	for line, _ := r.ReadString('\n'); line != "end\n"; line, _ = r.ReadString('\n') {
		got = append(got, strings.TrimSpace(line))
	}
	want := []string{"window 600000000000 13 2", "compartment 0 - - - prog", "compartment 1 abcd - - -",
		"runtime libc.so.6", "stub 39", "stub 83"}
	if !slices.Equal(got, want) {
		t.Errorf("configuration:\n%q\nwant\n%q", got, want)
	}
	lib.WriteString("object 0 0 2049 12 - /bin/prog with spaces\n" +
		"object -1 1 2049 13 abcd /lib/libc.so.6\n" +
		"text 0 555500001000 555500002000\n" +
		"runtime 7f0000000000 7f0000100000\n" +
		"sites 21c0\nepoch 600000004000\nsealed 38\nend\n")
	start, err := ch.start(win, ids)
	if err != nil {
		t.Fatal(err)
	}
	wantLayout := compartment.Layout{Window: win.base, SlotShift: 13, Slots: []string{"prog", "libx.so"}, Sites: 0x21c0,
		Text:    map[string][]compartment.Range{"prog": {{Start: 0x5555_0000_1000, End: 0x5555_0000_2000}}},
		Runtime: []compartment.Range{{Start: 0x7f00_0000_0000, End: 0x7f00_0010_0000}}}
	if !sameLayout(start.Layout, wantLayout) || start.Epoch != 0x6000_0000_4000 || start.Unsealed != syscall.ENOSYS {
		t.Errorf("start: %+v", start)
	}
	wantObjects := []Object{{Path: "/bin/prog with spaces", Compartment: "prog", Dev: 2049, Ino: 12},
		{Path: "/lib/libc.so.6", Runtime: true, Dev: 2049, Ino: 13, BuildID: "abcd"}}
	if !slices.Equal(start.Objects, wantObjects) {
		t.Errorf("objects: %+v, want %+v", start.Objects, wantObjects)
	}
	prog := []bpf.Instruction{{Op: 0x06, K: 0x7fff0000}}
	if err := ch.sendProgram(prog); err != nil {
		t.Fatal(err)
	}
	header, _ := r.ReadString('\n')
	body := make([]byte, bpf.InstructionSize)
	if _, err := r.Read(body); err != nil || header != "program 1\n" || string(body) != string(bpf.Encode(prog)) {
		t.Errorf("program: %q %x, %v", header, body, err)
	}
	sendListener(t, lib)
	lib.Close() // the helper closes the program's socket once it sent the listener
	helper, fd, err := ch.handoff()
	if err != nil || helper != 77 || fd < 0 {
		t.Fatalf("handoff: helper %d, fd %d, %v", helper, fd, err)
	}
	unix.Close(fd)
}

// sendListener sends the helper's line, then the listener (here a pipe)
// with the next line, as the library and its helper do.
func sendListener(t *testing.T, lib *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	lib.WriteString("helper 77\n")
	if err := unix.Sendmsg(int(lib.Fd()), []byte("listener 77\n"), unix.UnixRights(p[0]), nil, 0); err != nil {
		t.Fatal(err)
	}
}

func sameLayout(a, b compartment.Layout) bool {
	if a.Window != b.Window || a.SlotShift != b.SlotShift || a.Sites != b.Sites || !slices.Equal(a.Slots, b.Slots) || !slices.Equal(a.Runtime, b.Runtime) || len(a.Text) != len(b.Text) {
		return false
	}
	for name, rs := range a.Text {
		if !slices.Equal(rs, b.Text[name]) {
			return false
		}
	}
	return true
}

// TestConversationFails checks what the launcher makes of a library that
// says something unexpected, or goes away.
func TestConversationFails(t *testing.T) {
	ids, err := newIdentities(&policy.Policy{Compartments: []policy.Compartment{{Name: "prog"}}})
	if err != nil {
		t.Fatal(err)
	}
	win := window{base: 0x6000_0000_0000, shift: 13, slots: 1}
	for _, tc := range []struct {
		name, says string
		step       func(*channel) error
		want       string
	}{
		{"old library", "hello 0 4096\n", func(c *channel) error { _, err := c.hello(); return err }, "protocol 0"},
		{"not hello", "layout\n", func(c *channel) error { _, err := c.hello(); return err }, "want hello"},
		{"gone", "", func(c *channel) error { _, err := c.hello(); return err }, errClosed.Error()},
		{"slot out of range", "text 3 1000 2000\nend\n", func(c *channel) error { _, err := c.start(win, ids); return err }, "slot 3 of 1"},
		{"empty range", "runtime 2000 1000\nend\n", func(c *channel) error { _, err := c.start(win, ids); return err }, "empty range"},
		{"unknown line", "bogus 1\nend\n", func(c *channel) error { _, err := c.start(win, ids); return err }, "malformed"},
		{"gone before the listener", "helper 12\n", func(c *channel) error {
			helper, _, err := c.handoff()
			if helper != 12 {
				t.Errorf("helper %d, want 12", helper)
			}
			return err
		}, errClosed.Error()},
	} {
		ch, lib := socketPair(t)
		lib.WriteString(tc.says)
		lib.Close()
		if err := tc.step(ch); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
