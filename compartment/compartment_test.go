package compartment

import (
	"strings"
	"testing"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// twoLibs: libgetpid.so may call getpid, libmk.so nothing; the union allows
// both getpid and mkdir, and write, which both may call.
func twoLibs() *policy.Policy {
	return &policy.Policy{
		Default: policy.ActEPERM,
		BadArch: policy.ActKillProcess,
		Rules: []policy.Rule{{Syscalls: []string{"getpid", "mkdir", "write", "rt_sigreturn", "futex"},
			Action: policy.ActAllow}},
		Compartments: []policy.Compartment{
			{Name: "libgetpid.so", Syscalls: []string{"getpid", "write"}},
			{Name: "libmk.so", Syscalls: []string{"write"}},
		},
	}
}

var layout = Layout{
	Window:    0x7f00_0000_0000,
	SlotShift: 14,
	Slots:     []string{"libgetpid.so", "libmk.so"},
	Sites:     0x2000,
	Text:      map[string][]Range{"libmk.so": {{Start: 0x5555_0000_1000, End: 0x5555_0000_2000}}},
	Runtime:   []Range{{Start: 0x7ff0_0000_0000, End: 0x7ff0_0010_0000}},
}

func TestVerdict(t *testing.T) {
	s, err := NewSpec(twoLibs(), layout)
	if err != nil {
		t.Fatal(err)
	}
	getpid, mkdir, write, mount := uint32(39), uint32(83), uint32(1), uint32(165)
	sigreturn, futex, restart, mseal := uint32(15), uint32(202), uint32(219), uint32(462)
	slot0, slot1 := layout.Window, layout.Window+1<<layout.SlotShift
	site := func(nr uint32) uint64 {
		off, ok := layout.Pinned(nr)
		if !ok {
			t.Fatalf("no site for %d", nr)
		}
		return off
	}
	for _, tc := range []struct {
		name string
		nr   uint32
		ip   uint64
		want policy.Action
	}{
		{"getpid from its library's stub", getpid, slot0 + site(getpid), policy.ActAllow},
		{"getpid from elsewhere in its library's slot", getpid, slot0 + 0x10, policy.ActEPERM},
		{"getpid from mkdir's site in its library's slot", getpid, slot0 + site(mkdir), policy.ActEPERM},
		{"getpid from the other library's stub", getpid, slot1 + site(getpid), policy.ActEPERM},
		{"getpid from the other library's own code", getpid, 0x5555_0000_1800, policy.ActEPERM},
		{"getpid from inside libc", getpid, 0x7ff0_0000_0100, Supervise},
		{"getpid from unknown code", getpid, 0x1234_0000, Supervise},
		{"write, which every compartment may make", write, 0x1234_0000, policy.ActAllow},
		{"mkdir, which no compartment may make", mkdir, slot0 + site(mkdir), policy.ActEPERM},
		{"mount, which the union denies", mount, slot0 + site(mount), policy.ActEPERM},
		{"past the window", getpid, slot1 + 1<<layout.SlotShift + site(getpid), Supervise},
		// No compartment lists them; the union allows them.
		{"rt_sigreturn from inside libc", sigreturn, 0x7ff0_0000_0100, policy.ActAllow},
		{"futex from a library's own code", futex, 0x5555_0000_1800, policy.ActAllow},
		{"restart_syscall, which the union denies", restart, 0x7ff0_0000_0100, policy.ActEPERM},
		// Sealing only takes rights away: the policy need not name it.
		{"mseal from a library's stub", mseal, slot1 + 0x10, policy.ActAllow},
		{"mseal from unknown code", mseal, 0x1234_0000, policy.ActAllow},
	} {
		if got := s.Verdict(syscalls.AuditArchX86_64, tc.nr, tc.ip, [6]uint64{}); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := s.Verdict(syscalls.AuditArchI386, 20, slot0+site(20), [6]uint64{}); got != policy.ActKillProcess {
		t.Errorf("an i386 call: %s, want the bad-arch action", got)
	}
}

// TestRuntimeReach: a call from inside libc is decided in the kernel
// when every compartment whose code can reach it may make it, or none
// may; a compartment whose reach the policy does not give can reach
// every call, and one may always reach the calls it may make.
func TestRuntimeReach(t *testing.T) {
	getpid, inLibc := uint32(39), uint64(0x7ff0_0000_0100)
	for _, tc := range []struct {
		name         string
		getpid, mk   []string // the compartments' reach, nil for unknown
		want         policy.Action
		wantCoverage Coverage
	}{
		{"reach unknown", nil, nil, Supervise, Some},
		{"libmk.so cannot reach getpid", nil, []string{"write"}, policy.ActAllow, All},
		{"libmk.so can reach getpid", nil, []string{"getpid"}, Supervise, Some},
		{"libgetpid.so's reach left out what it may make", []string{}, []string{}, policy.ActAllow, All},
		{"from unknown code, reach does not count", []string{}, []string{}, Supervise, Some},
	} {
		p := twoLibs()
		p.Compartments[0].Reach, p.Compartments[1].Reach = tc.getpid, tc.mk
		s, err := NewSpec(p, layout)
		if err != nil {
			t.Fatal(err)
		}
		ip := inLibc
		if strings.HasPrefix(tc.name, "from unknown code") {
			ip = 0x1234_0000
		}
		if got := s.Verdict(syscalls.AuditArchX86_64, getpid, ip, [6]uint64{}); got != tc.want {
			t.Errorf("%s: getpid: %s, want %s", tc.name, got, tc.want)
		}
		if got := s.RuntimeCoverage(getpid); ip == inLibc && got != tc.wantCoverage {
			t.Errorf("%s: runtime coverage %v, want %v", tc.name, got, tc.wantCoverage)
		}
	}
	// Reach never takes away: libmk.so, which cannot reach getpid, still
	// may not make it from its own code.
	p := twoLibs()
	p.Compartments[1].Reach = []string{"write"}
	s, err := NewSpec(p, layout)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Verdict(syscalls.AuditArchX86_64, getpid, 0x5555_0000_1800, [6]uint64{}); got != policy.ActEPERM {
		t.Errorf("getpid from libmk.so's own code: %s, want EPERM", got)
	}
}

func TestNewSpecRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Layout)
		want string
	}{
		{"unknown compartment", func(l *Layout) { l.Slots = append(l.Slots, "libx.so") }, `places "libx.so"`},
		{"misaligned window", func(l *Layout) { l.Window += 0x800 }, "misaligned"},
		{"window across 4 GiB", func(l *Layout) { l.Window = 0x7f00_ffff_c000 }, "crosses a 4 GiB boundary"},
		{"sites past the slot", func(l *Layout) { l.Sites = 0x3000 + SiteStride }, "does not fit a slot"},
		{"overlapping code", func(l *Layout) {
			l.Runtime = append(l.Runtime, Range{Start: 0x5555_0000_1800, End: 0x5555_0000_3000})
		}, "overlap"},
	} {
		l := layout
		l.Slots = append([]string(nil), layout.Slots...)
		l.Runtime = append([]Range(nil), layout.Runtime...)
		tc.edit(&l)
		_, err := NewSpec(twoLibs(), l)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestVerdictPhases: in a policy with phases, a compartment's calls it
// may make only before serving go to the supervisor, which knows the
// phase, from its own code and its own site; its serving calls stay in
// the kernel; a call no compartment may make in any phase is denied by
// number.
func TestVerdictPhases(t *testing.T) {
	p := twoLibs()
	p.ServingFrom = []string{"epoll_wait"}
	p.Compartments[0].Serving = []string{"write"}
	s, err := NewSpec(p, layout)
	if err != nil {
		t.Fatal(err)
	}
	getpid, mkdir, write := uint32(39), uint32(83), uint32(1)
	slot0 := layout.Window
	getpidSite, _ := layout.Pinned(getpid)
	for _, tc := range []struct {
		name string
		nr   uint32
		ip   uint64
		want policy.Action
		cov  Coverage
	}{
		{"getpid, starting only, from its library's stub", getpid, slot0 + getpidSite, Supervise, Some},
		{"getpid, starting only, elsewhere in its library's slot", getpid, slot0 + 0x10, policy.ActEPERM, Some},
		{"getpid from the other library's own code", getpid, 0x5555_0000_1800, policy.ActEPERM, Some},
		{"getpid from inside libc", getpid, 0x7ff0_0000_0100, Supervise, Some},
		{"write, every compartment's in both phases", write, 0x1234_0000, policy.ActAllow, All},
		{"mkdir, no compartment's in any phase", mkdir, slot0, policy.ActEPERM, None},
	} {
		if got := s.Verdict(syscalls.AuditArchX86_64, tc.nr, tc.ip, [6]uint64{}); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if got := s.Coverage(tc.nr); got != tc.cov {
			t.Errorf("%s: coverage %d, want %d", tc.name, got, tc.cov)
		}
	}
	if !s.May("libgetpid.so", getpid) || s.Allowed["libgetpid.so"][getpid] || !s.Starting["libgetpid.so"][getpid] {
		t.Errorf("libgetpid.so's getpid: may %v, serving %v, starting %v; want starting only",
			s.May("libgetpid.so", getpid), s.Allowed["libgetpid.so"][getpid], s.Starting["libgetpid.so"][getpid])
	}
}
