package mech

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/filter"
)

// PayloadEnv is the environment variable that makes a binary linking this
// package play the payload. Its value is the request, as JSON.
const PayloadEnv = "SYSCELL_MECHBENCH_PAYLOAD"

// request is what the parent asks of a payload.
type request struct {
	Mechanism  Mechanism `json:"mechanism"`
	Iterations int       `json:"iterations"`
}

// message is what the payload tells the parent, one per packet: that it is
// ready to loop (with its notification listener, if any, attached as
// SCM_RIGHTS), then how long its loop took; or what went wrong instead.
type message struct {
	Ready  bool   `json:"ready,omitempty"`
	LoopNs int64  `json:"loop_ns,omitempty"`
	Error  string `json:"error,omitempty"`
}

const (
	// payloadSocket is the payload's descriptor of its socket to the
	// parent: the first after standard error.
	payloadSocket = 3
	// goByte, sent by the parent, starts the payload's loop.
	goByte = 'g'
)

// init plays the payload when PayloadEnv asks for it. It cannot wait for
// main: see the package documentation.
func init() {
	if env, ok := os.LookupEnv(PayloadEnv); ok {
		os.Exit(playPayload(env))
	}
}

// playPayload plays the payload and returns its exit status. Failures are
// reported to the parent, or to standard error when even that fails.
func playPayload(env string) int {
	if strings.Contains(env, `"mechanism":"`+string(Supervised)+`"`) || strings.Contains(env, `"mechanism":"`+string(SupervisedProc)+`"`) {
		return playSupervised(env)
	}
	loop, err := payload(env)
	msg, status := message{LoopNs: loop.Nanoseconds()}, 0
	if err != nil {
		msg, status = message{Error: err.Error()}, 1
	}
	if err := send(msg, -1); err != nil {
		fmt.Fprintf(os.Stderr, "mech payload: %v\n", err)
		return 2
	}
	return status
}

// playSupervised plays the supervised mechanism's payload, which cell.Run
// started under its filter: it says on standard output how long its loop
// took, or what went wrong.
func playSupervised(env string) int {
	var req request
	err := json.Unmarshal([]byte(env), &req)
	var loop time.Duration
	if err == nil {
		loop, err = supervisedLoop(req.Iterations)
	}
	msg, status := message{LoopNs: loop.Nanoseconds()}, 0
	if err != nil {
		msg, status = message{Error: err.Error()}, 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(msg); err != nil {
		return 2
	}
	return status
}

// payload puts its mechanism's program in place, says it is ready, and
// times its loop once the parent, whose part of the mechanism is then in
// place too, says go.
func payload(env string) (time.Duration, error) {
	var req request
	if err := json.Unmarshal([]byte(env), &req); err != nil {
		return 0, fmt.Errorf("decode %s: %w", PayloadEnv, err)
	}
	s, ok := specs[req.Mechanism]
	if !ok {
		return 0, fmt.Errorf("unknown mechanism %q", req.Mechanism)
	}
	// The loop allocates nothing; a collection could only add noise.
	debug.SetGCPercent(-1)
	listener, err := s.filter.install()
	if err != nil {
		return 0, err
	}
	if err := send(message{Ready: true}, listener); err != nil {
		return 0, err
	}
	if err := awaitGo(); err != nil {
		return 0, err
	}
	start := time.Now()
	for range req.Iterations {
		unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	}
	return time.Since(start), nil
}

// install puts the program on the calling thread, the payload's, and
// returns the notification listener, or -1 when it has none. A nil program
// installs nothing.
func (p *program) install() (int, error) {
	if p == nil {
		return -1, nil
	}
	// The copies below the top one let the next be installed.
	below, err := p.instructions(unix.SYS_PRCTL, unix.SYS_SECCOMP)
	if err != nil {
		return -1, err
	}
	for range p.stacked - 1 {
		if _, err := filter.Install(below, p.flags()); err != nil {
			return -1, err
		}
	}
	prog, err := p.instructions()
	if err != nil {
		return -1, err
	}
	return filter.Install(prog, p.flags())
}

// send sends msg to the parent, with descriptor fd unless it is negative.
func send(msg message, fd int) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	var rights []byte
	if fd >= 0 {
		rights = unix.UnixRights(fd)
	}
	if err := unix.Sendmsg(payloadSocket, b, rights, nil, 0); err != nil {
		return fmt.Errorf("send to the parent: %w", err)
	}
	return nil
}

// awaitGo blocks until the parent says go.
func awaitGo() error {
	var b [1]byte
	n, err := unix.Read(payloadSocket, b[:])
	if err != nil {
		return fmt.Errorf("wait for the parent: %w", err)
	}
	if n != 1 || b[0] != goByte {
		return fmt.Errorf("wait for the parent: got %q, want %q", b[:n], goByte)
	}
	return nil
}
