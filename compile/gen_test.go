package compile

import (
	"math/rand"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// namePool is a set of syscalls that exist on all three ABIs, and some that
// exist on only one, so random policies meet names absent on an ABI.
var namePool = []string{
	"read", "write", "openat", "close", "mmap", "mprotect", "ioctl", "futex",
	"socket", "connect", "clone", "clone3", "personality", "fcntl", "prctl",
	"mkdirat", "unlinkat", "execve", "getpid", "kill", "mount", "ptrace",
	"setsockopt", "madvise", "arch_prctl", "socketcall", "mseal", "setxattrat",
}

// valuePool holds values that sit on the edges of 32-bit halves.
var valuePool = []uint64{
	0, 1, 2, 3, 38, 40, 0xff, 0x7fffffff, 0x80000000, 0xffffffff,
	1 << 32, 1<<32 | 5, 0xffffffff00000000, ^uint64(0), 0x20008, 0x7e020000,
}

var actionPool = []policy.Action{
	policy.ActAllow, policy.ActEPERM, policy.ActKillProcess,
	{Kind: policy.Errno, Data: 38}, {Kind: policy.Trap}, {Kind: policy.Log},
	{Kind: policy.KillThread}, {Kind: policy.UserNotify}, {Kind: policy.Trace, Data: 7},
}

// randomPolicy builds a policy from rng. Conflicting rules are possible and
// welcome: precedence must resolve them the same way everywhere.
func randomPolicy(rng *rand.Rand) *policy.Policy {
	p := &policy.Policy{
		Default: actionPool[rng.Intn(len(actionPool))],
		BadArch: actionPool[rng.Intn(len(actionPool))],
	}
	for _, a := range syscalls.Arches {
		if rng.Intn(2) == 0 {
			p.Arches = append(p.Arches, a)
		}
	}
	if len(p.Arches) == 0 {
		p.Arches = []syscalls.Arch{syscalls.X86_64}
	}
	for n := rng.Intn(14) + 1; n > 0; n-- {
		p.Rules = append(p.Rules, randomRule(rng))
	}
	return p
}

func randomRule(rng *rand.Rand) policy.Rule {
	r := policy.Rule{Action: actionPool[rng.Intn(len(actionPool))]}
	for n := rng.Intn(3) + 1; n > 0; n-- {
		r.Syscalls = append(r.Syscalls, namePool[rng.Intn(len(namePool))])
	}
	for n := rng.Intn(4); n > 0 && rng.Intn(3) > 0; n-- {
		r.Conds = append(r.Conds, randomCond(rng))
	}
	return r
}

func randomCond(rng *rand.Rand) policy.Cond {
	c := policy.Cond{Arg: uint8(rng.Intn(3)), Op: policy.Op(rng.Intn(int(policy.MaskedEq) + 1))}
	c.Value = randomValue(rng)
	if c.Op == policy.MaskedEq {
		c.Mask = randomValue(rng)
		c.Value &= c.Mask
	}
	return c
}

func randomValue(rng *rand.Rand) uint64 {
	if rng.Intn(5) == 0 {
		return rng.Uint64() >> uint(rng.Intn(64))
	}
	return valuePool[rng.Intn(len(valuePool))]
}

// input is one seccomp_data the tests decide.
type input struct {
	arch, nr uint32
	args     [policy.MaxArgs]uint64
}

// inputsFor lists inputs that reach every rule of r, its neighbours and a few
// random calls, from every ABI and from a foreign one.
func inputsFor(r *policy.Resolved, rng *rand.Rand, randomArgs int) []input {
	var in []input
	for _, arch := range []uint32{syscalls.AuditArchX86_64, syscalls.AuditArchI386, 0xdead} {
		for _, t := range r.Tables {
			for nr, branches := range t.Syscalls {
				for _, args := range policy.ArgVectors(branches) {
					in = append(in, input{arch, nr, args}, input{arch, nr ^ syscalls.X32Bit, args})
				}
				for k := 0; k < randomArgs; k++ {
					var args [policy.MaxArgs]uint64
					for i := range args {
						args[i] = randomValue(rng)
					}
					in = append(in, input{arch, nr, args})
				}
			}
		}
		for k := 0; k < 8; k++ {
			in = append(in, input{arch, uint32(rng.Intn(1100)), [policy.MaxArgs]uint64{}})
			in = append(in, input{arch, rng.Uint32(), [policy.MaxArgs]uint64{}})
		}
	}
	return in
}
