package measure

import (
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// allowGetpid allows getpid (39) and read (0) on x86_64 and returns EPERM
// for everything else.
var allowGetpid = &policy.Policy{
	Default: policy.ActEPERM,
	BadArch: policy.ActKillProcess,
	Rules:   []policy.Rule{{Syscalls: []string{"getpid", "read"}, Action: policy.ActAllow}},
}

// program assembles a hand-written program; the tests know its paths.
func program(t *testing.T, text string) []bpf.Instruction {
	t.Helper()
	prog, err := bpf.Assemble(text)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestMeasure(t *testing.T) {
	r := allowGetpid.Resolve([]syscalls.Arch{syscalls.X86_64})
	for _, tc := range []struct {
		name         string
		text         string
		mismatches   int
		notCacheable int
		uniformMax   int
	}{{
		// getpid and read allowed through nr only: right and cacheable.
		name: "exact",
		text: `ld [4]
jeq #0xc000003e, nr, bad
bad:
ret KILL_PROCESS
nr:
ld [0]
jeq #39, allow, +0
jeq #0, allow, deny
allow:
ret ALLOW
deny:
ret ERRNO(1)`,
		uniformMax: 6,
	}, {
		// read's path loads an argument: still right, no longer cacheable.
		name: "reads an argument",
		text: `ld [4]
jeq #0xc000003e, nr, bad
bad:
ret KILL_PROCESS
nr:
ld [0]
jeq #39, allow, +0
jeq #0, +0, deny
ld [16]
jeq #0, allow, allow
allow:
ret ALLOW
deny:
ret ERRNO(1)`,
		notCacheable: 1,
		uniformMax:   8,
	}, {
		// read denied: one mismatch, and nothing to cache for it.
		name: "denies read",
		text: `ld [4]
jeq #0xc000003e, nr, bad
bad:
ret KILL_PROCESS
nr:
ld [0]
jeq #39, allow, deny
allow:
ret ALLOW
deny:
ret ERRNO(1)`,
		mismatches: 1,
		uniformMax: 5,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Measure(program(t, tc.text), r)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Mismatches) != tc.mismatches || len(rep.NotCacheable) != tc.notCacheable || rep.UniformMax != tc.uniformMax {
				t.Errorf("mismatches %v, not cacheable %v, uniform max %d; want %d, %d, %d",
					rep.Mismatches, rep.NotCacheable, rep.UniformMax, tc.mismatches, tc.notCacheable, tc.uniformMax)
			}
			if rep.Inputs != Range {
				t.Errorf("%d inputs, want one per number: %d", rep.Inputs, Range)
			}
		})
	}
}
