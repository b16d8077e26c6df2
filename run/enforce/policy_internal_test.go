package enforce

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policies"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

func loadPolicy(t *testing.T, name string) *policy.Resolved {
	t.Helper()
	var p *policy.Policy
	var err error
	if policies.Known(name) {
		p, _, err = policies.Load(name, policy.OCIOptions{Kernel: "6.18"})
	} else {
		p, _, err = policy.Load(filepath.Join("testdata", name), policy.OCIOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.Resolve(p.Arches)
}

// argVectors are arguments that select different branches of the test
// policies' conditions.
var argVectors = [][6]uint64{
	{},
	{1, 2, 3, 4, 5, 6},
	{40, 0, 0x7e020000, 0, 0, 0},
	{^uint64(0), 1 << 32, 0x10000, 8, 0, 0},
}

// TestPlan checks, for every call of every ABI, that the installed program
// stops a call exactly when the policy does, notifies it exactly when the
// supervisor is to decide or report it (every stop but the kernel's kills
// when enforcing, every stop otherwise), and notifies every x86_64 execve.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		policy string
		mode   Mode
	}{
		{"runtime-default", Enforce},
		{"runtime-default", Audit},
		{"runtime-default", Complain},
		{"deny-dangerous", Enforce},
		{"audit.toml", Enforce},
		{"audit.toml", Audit},
		{"noexec.toml", Enforce},
		{"execve_cond.toml", Enforce},
		{"execve_only.toml", Enforce},
		{"execve_only.toml", Complain},
	} {
		t.Run(tc.policy+"/"+tc.mode.String(), func(t *testing.T) {
			r := loadPolicy(t, tc.policy)
			p, err := newPlan(r, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if p.decide != r {
				t.Fatalf("plan decides by %p, want %p", p.decide, r)
			}
			for _, table := range r.Tables {
				for nr := range uint32(1024) {
					if table.Arch == syscalls.X32 {
						nr |= syscalls.X32Bit
					}
					for _, args := range argVectors {
						checkVerdict(t, p, tc.mode, table.Arch.AuditArch(), nr, args)
					}
				}
			}
		})
	}
}

func checkVerdict(t *testing.T, p *plan, mode Mode, arch, nr uint32, args [6]uint64) {
	t.Helper()
	want := p.decide.Decide(arch, nr, args)
	got := p.kernel.Decide(arch, nr, args)
	notify := policy.Action{Kind: policy.UserNotify}
	switch {
	case arch == syscalls.AuditArchX86_64 && nr == unix.SYS_EXECVE:
		want = notify
	case !lets(want) && (mode != Enforce || !Kills(want)):
		want = notify
	}
	if got != want {
		t.Errorf("%#x/%d%v: program %s, want %s", arch, nr, args, got, want)
	}
}

func TestPlanNeedsX86_64(t *testing.T) {
	if _, err := newPlan(loadPolicy(t, "x86only.toml"), Audit); err == nil {
		t.Error("a policy without x86_64 was accepted")
	}
}

// TestOverride checks that Override replaces every stopping action, and
// only those.
func TestOverride(t *testing.T) {
	r := loadPolicy(t, "runtime-default")
	for _, act := range []policy.Action{policy.ActKillProcess, policy.ActEPERM, {Kind: policy.Trap}} {
		o := Override(r, act)
		if o.BadArch != act {
			t.Errorf("bad-arch action %s, want %s", o.BadArch, act)
		}
		for _, table := range r.Tables {
			for nr := range uint32(1024) {
				if table.Arch == syscalls.X32 {
					nr |= syscalls.X32Bit
				}
				for _, args := range argVectors {
					want := r.Decide(table.Arch.AuditArch(), nr, args)
					if !lets(want) {
						want = act
					}
					if got := o.Decide(table.Arch.AuditArch(), nr, args); got != want {
						t.Errorf("%s %d%v overridden with %s: %s, want %s", table.Arch, nr, args, act, got, want)
					}
				}
			}
		}
	}
}
