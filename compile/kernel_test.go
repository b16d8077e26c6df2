package compile

import (
	"context"
	"math/rand"
	"os"
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/filter/filtertest"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

func TestMain(m *testing.M) {
	filter.MaybeRunChild()
	os.Exit(m.Run())
}

// unsafeToRun are syscalls a probe must not make even with arguments of all
// ones, because they end, fork, block or unwind the probing thread.
var unsafeToRun = map[string]bool{
	"exit": true, "exit_group": true, "fork": true, "vfork": true, "clone3": true,
	"pause": true, "rt_sigreturn": true, "rt_sigsuspend": true, "vhangup": true,
	"sync": true, "syncfs": true, "uretprobe": true, "munlockall": true,
	"mlockall": true,
}

// probeCall is the call a child makes. The tests give arguments the kernel
// refuses (bad descriptors, pointers and flags: all ones), so that an
// allowed call fails harmlessly.
func probeCall(nr uint32, args [policy.MaxArgs]uint64) filter.Syscall {
	c := filter.Syscall{Nr: uintptr(nr)}
	for i, a := range args {
		c.Args[i] = uintptr(a)
	}
	return c
}

// kernelVerdicts runs calls under prog in a child and returns the kernel's
// verdict for each, as prog's return value.
func kernelVerdicts(t *testing.T, prog []bpf.Instruction, calls []filter.Syscall) []uint32 {
	t.Helper()
	rewritten, errnoOf := filter.DistinctErrnos(prog)
	res, err := filter.Child{}.Probe(context.Background(), rewritten, calls)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	out := make([]uint32, len(res))
	for i, r := range res {
		out[i] = filter.Verdict(r, errnoOf)
	}
	return out
}

// interpreterVerdict is what bpf.Run decides, with ALLOW standing for every
// action that lets the call run, as the kernel probe reports it.
func interpreterVerdict(t *testing.T, prog []bpf.Instruction, nr uint32, args [policy.MaxArgs]uint64) uint32 {
	t.Helper()
	d := bpf.SeccompData{Nr: nr, Arch: syscalls.AuditArchX86_64, Args: args}
	res, err := bpf.Run(prog, &d)
	if err != nil {
		t.Fatal(err)
	}
	if a := policy.ActionFromRet(res.Ret); a.Kind == policy.Allow || a.Kind == policy.Log {
		return policy.RetAllow
	}
	return res.Ret
}

// TestKernelAgreesOnDocker installs the compiled Docker profile in a child
// and makes every x86_64 syscall, and the argument variations of the rules,
// for real: the kernel's verdict must be the interpreter's.
func TestKernelAgreesOnDocker(t *testing.T) {
	filtertest.RequireSeccomp(t)
	r := dockerProfile(t, syscalls.X86_64, syscalls.X32)
	prog, err := Compile(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nrs []uint32
	var argss [][policy.MaxArgs]uint64
	allOnes := [policy.MaxArgs]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	for _, t := range r.Tables {
		for _, nr := range syscalls.Numbers(t.Arch) {
			name, _ := syscalls.Name(t.Arch, nr)
			if unsafeToRun[name] || name == "clone" {
				continue
			}
			vectors := [][policy.MaxArgs]uint64{allOnes}
			if name == "socket" || name == "personality" {
				vectors = append(vectors, socketSafe(policy.ArgVectors(t.Syscalls[nr]))...)
			}
			for _, v := range vectors {
				nrs, argss = append(nrs, nr), append(argss, v)
			}
		}
	}
	// clone's flags vary in the bits the rule masks; CLONE_SIGHAND without
	// CLONE_VM makes every allowed clone fail with EINVAL.
	for _, flags := range []uint64{0, 0x7e020000, 0x00020000, 0x10000000, 1 << 40} {
		nrs = append(nrs, 56)
		argss = append(argss, [policy.MaxArgs]uint64{flags | 0x800})
	}
	checkKernel(t, prog, nrs, argss)
}

// socketSafe keeps the varied first argument and makes the others invalid:
// socket's type -1 and personality's extra arguments (ignored).
func socketSafe(vectors [][policy.MaxArgs]uint64) [][policy.MaxArgs]uint64 {
	for i := range vectors {
		for a := 1; a < policy.MaxArgs; a++ {
			vectors[i][a] = ^uint64(0)
		}
	}
	return vectors
}

func checkKernel(t *testing.T, prog []bpf.Instruction, nrs []uint32, argss [][policy.MaxArgs]uint64) {
	t.Helper()
	calls := make([]filter.Syscall, len(nrs))
	for i := range nrs {
		calls[i] = probeCall(nrs[i], argss[i])
	}
	got := kernelVerdicts(t, prog, calls)
	for i, k := range got {
		if want := interpreterVerdict(t, prog, nrs[i], argss[i]); k != want {
			t.Errorf("syscall %#x args %x: kernel %#x, interpreter %#x", nrs[i], argss[i], k, want)
		}
	}
	t.Logf("%d real syscalls agree", len(got))
}

// argFree syscalls ignore their arguments, so random conditions on them can
// be probed with any values.
var argFree = []string{"getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "gettid", "getpgrp"}

// TestKernelAgreesOnRandomPolicies compiles random argument-checking
// policies over argument-free syscalls and probes them with random values.
func TestKernelAgreesOnRandomPolicies(t *testing.T) {
	filtertest.RequireSeccomp(t)
	for seed := int64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := &policy.Policy{Default: policy.ActEPERM, BadArch: policy.ActKillProcess, Arches: []syscalls.Arch{syscalls.X86_64}}
		for n := 0; n < 10; n++ {
			rule := randomRule(rng)
			rule.Syscalls = []string{argFree[rng.Intn(len(argFree))]}
			p.Rules = append(p.Rules, rule)
		}
		prog, err := Compile(p.Resolve(p.Arches), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var nrs []uint32
		var argss [][policy.MaxArgs]uint64
		r := p.Resolve(p.Arches)
		for nr, branches := range r.Tables[0].Syscalls {
			for _, v := range policy.ArgVectors(branches) {
				nrs, argss = append(nrs, nr), append(argss, v)
			}
		}
		checkKernel(t, prog, nrs, argss)
	}
}
