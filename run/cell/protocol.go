package cell

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
)

// protocolVersion is the audit library's (PROTOCOL_VERSION in
// audit/audit.h).
const protocolVersion = 2

// channel is the launcher's end of the socket to the audit library. The
// conversation, in text lines (audit/config.c and audit/layout.c give
// the formats):
//
//	library:  hello VERSION BLOCK-SIZE
//	launcher: window, compartment, runtime and stub lines, then end
//	library:  object, text, runtime, sites, epoch and sealed lines, then end
//	launcher: program N and N 8-byte instructions, or fail REASON
//	library:  helper PID (0: the helper is not the launcher's child)
//	helper:   listener PID, carrying the listener (SCM_RIGHTS)
//
// A line that does not end the conversation as expected is an error; the
// library reports its own failures on the program's standard error and
// exits, which closes the socket.
type channel struct {
	conn *net.UnixConn
	r    *bufio.Reader
}

func newChannel(conn *net.UnixConn) *channel {
	return &channel{conn: conn, r: bufio.NewReader(conn)}
}

// errClosed reports that the library closed the socket: it says why on the
// program's standard error, and exits.
var errClosed = errors.New("the audit library closed the socket")

func (c *channel) line() (verb string, fields []string, err error) {
	s, err := c.r.ReadString('\n')
	if errors.Is(err, io.EOF) {
		return "", nil, errClosed
	}
	if err != nil {
		return "", nil, fmt.Errorf("cell: read from the audit library: %w", err)
	}
	fields = strings.Fields(s)
	if len(fields) == 0 {
		return "", nil, errors.New("cell: empty line from the audit library")
	}
	return fields[0], fields[1:], nil
}

func (c *channel) write(s string) error {
	if _, err := c.conn.Write([]byte(s)); err != nil {
		return fmt.Errorf("cell: write to the audit library: %w", err)
	}
	return nil
}

// hello reads the library's greeting: its stub block's size.
func (c *channel) hello() (int, error) {
	verb, f, err := c.line()
	if err != nil {
		return 0, err
	}
	if verb != "hello" || len(f) != 2 {
		return 0, fmt.Errorf("cell: the audit library said %q, want hello", verb)
	}
	if f[0] != strconv.Itoa(protocolVersion) {
		return 0, fmt.Errorf("cell: the audit library speaks protocol %s, syscell %d: rebuild it (make build)", f[0], protocolVersion)
	}
	size, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, fmt.Errorf("cell: hello from the audit library: %w", err)
	}
	return size, nil
}

// config is what the library needs before it sees the first object.
type config struct {
	window  window
	ids     *identities
	runtime []string
	// stubs are the system calls whose verdict depends on the caller:
	// only their wrappers get stubs.
	stubs []uint32
	// serving are the calls that start a process's serving phase
	// (phases.go): the library marks the first call of their wrappers.
	serving []uint32
}

func (c *channel) sendConfig(cfg config) error {
	return c.write(cfg.text())
}

// text is the configuration as the library reads it.
func (cfg config) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "window %x %d %d\n", cfg.window.base, cfg.window.shift, cfg.window.slots)
	for i, id := range cfg.ids.ids {
		fmt.Fprintf(&b, "compartment %d %s\n", i, id.line())
	}
	for _, name := range cfg.runtime {
		fmt.Fprintf(&b, "runtime %s\n", name)
	}
	for _, nr := range cfg.stubs {
		fmt.Fprintf(&b, "stub %d\n", nr)
	}
	for _, nr := range cfg.serving {
		fmt.Fprintf(&b, "serving %d\n", nr)
	}
	b.WriteString("end\n")
	return b.String()
}

// inheritRoom is how much the program's environment reserves for what
// the images it executes inherit (audit/inherit.c): the configuration,
// and the code ranges of the compartments' objects, counting generously
// on eight ranges of 40 bytes per compartment.
func (cfg config) inheritRoom() int {
	cfg.window = window{base: windowHigh, shift: 24, slots: len(cfg.ids.names)}
	return len(cfg.text()) + 320*len(cfg.ids.names) + 1024
}

// sendProgram sends the compiled filter.
func (c *channel) sendProgram(prog []bpf.Instruction) error {
	return c.write(fmt.Sprintf("program %d\n", len(prog)) + string(bpf.Encode(prog)))
}

// sendFail tells the library to exit, saying why.
func (c *channel) sendFail(err error) error {
	return c.write("fail " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
}

// handoff reads the pid of the library's helper process, a child of ours
// to reap, and the listener the helper sends. Both may come in one read,
// and a plain read would drop the listener, so nothing is buffered from
// here on. A helper pid is returned whenever one was read.
func (c *channel) handoff() (helper, listener int, err error) {
	helper, listener = -1, -1
	defer func() {
		if err != nil && listener >= 0 {
			unix.Close(listener)
			listener = -1
		}
	}()
	if c.r.Buffered() != 0 {
		return helper, listener, errors.New("cell: the audit library sent more than its layout")
	}
	var text []byte
	for helper < 0 || listener < 0 {
		buf := make([]byte, 256)
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
		if n == 0 && (err == nil || errors.Is(err, io.EOF)) {
			return helper, listener, errClosed
		}
		if err != nil {
			return helper, listener, fmt.Errorf("cell: receive the listener: %w", err)
		}
		if oobn > 0 {
			if listener >= 0 {
				unix.Close(listener)
				return helper, -1, errors.New("cell: the audit library sent two listeners")
			}
			if listener, err = unixRight(oob[:oobn]); err != nil {
				return helper, -1, err
			}
		}
		text = append(text, buf[:n]...)
		helper, err = helperPid(string(text))
		if err != nil {
			return helper, listener, err
		}
	}
	unix.CloseOnExec(listener)
	return helper, listener, c.closed()
}

// closed waits for the end of the socket: the helper closes the
// program's copies of the listener, then of the socket, before the
// supervisor may answer the program's first call.
func (c *channel) closed() error {
	var buf [64]byte
	n, err := c.conn.Read(buf[:])
	switch {
	case n > 0:
		return errors.New("cell: the audit library wrote after the listener")
	case errors.Is(err, io.EOF):
		return nil
	}
	return fmt.Errorf("cell: wait for the helper to close the program's socket: %w", err)
}

// helperPid finds "helper PID" among the lines read so far, or -1.
func helperPid(text string) (int, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "helper" {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				return -1, fmt.Errorf("cell: the audit library said %q: %w", line, err)
			}
			return pid, nil
		}
	}
	return -1, nil
}

// unixRight returns the one descriptor a control message carries.
func unixRight(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, fmt.Errorf("cell: the listener's message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		rights, err := unix.ParseUnixRights(&m)
		if err != nil {
			return -1, fmt.Errorf("cell: the listener's message: %w", err)
		}
		fds = append(fds, rights...)
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("cell: the listener's message carries %d descriptors, want 1", len(fds))
	}
	return fds[0], nil
}
