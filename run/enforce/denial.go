package enforce

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
)

// Denial is one call a policy stopped, as `syscell run --log-denials`
// writes it, one JSON object a line.
type Denial struct {
	Time time.Time `json:"time"`
	// Pid is the calling thread's id.
	Pid     int       `json:"pid"`
	ABI     string    `json:"abi"`
	Syscall string    `json:"syscall"`
	Nr      uint32    `json:"nr"`
	Args    [6]uint64 `json:"args"`
	// IP is the instruction pointer just after the system call
	// instruction.
	IP uint64 `json:"ip"`
	// Compartment is who made the call, for a policy with compartments.
	Compartment string `json:"compartment,omitempty"`
	// Serving says the calling process served (policy phases): the
	// compartment may make the call only while its process starts.
	Serving bool `json:"serving,omitempty"`
	// Action is what was done with the call: the policy's, or "audit"
	// where audit mode let it run.
	Action string `json:"action"`
}

// NewDenial describes the notified call n, stopped with act.
func NewDenial(n *notify.Notification, owner string, act policy.Action) Denial {
	abi, name := names(n.Data.Arch, n.Data.Nr)
	at := n.Received
	if at.IsZero() {
		at = time.Now()
	}
	return Denial{
		Time: at.UTC(), Pid: n.Pid, ABI: abi, Syscall: name, Nr: n.Data.Nr,
		Args: n.Data.Args, IP: n.Data.IP, Compartment: owner, Action: act.String(),
	}
}

// String is the summary `syscell run` prints: the call, who made it and
// where.
func (d *Denial) String() string {
	s := d.Syscall
	if d.ABI != "x86_64" {
		s = d.ABI + " " + s
	}
	if d.Compartment != "" {
		s += " by " + d.Compartment
	}
	if d.Serving {
		s += " while serving"
	}
	return fmt.Sprintf("%s at %#x (%s)", s, d.IP, d.Action)
}

// DenialLog writes denials as JSON lines; it is safe for concurrent use.
// A nil *DenialLog writes nothing.
type DenialLog struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewDenialLog writes to w.
func NewDenialLog(w io.Writer) *DenialLog { return &DenialLog{enc: json.NewEncoder(w)} }

// Write logs d.
func (l *DenialLog) Write(d Denial) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.enc.Encode(d)
	}
}

// Err is the first write error, if any.
func (l *DenialLog) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
