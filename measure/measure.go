// Package measure reports what a seccomp program costs and whether it is
// right: its size, the instructions executed per syscall (counted by the
// interpreter), which verdicts the kernel can cache, and the inputs on which
// it disagrees with the policy it was compiled from. It measures any
// program, whoever compiled it, so syscell's output is compared with
// libseccomp's and gVisor's on equal terms.
package measure

import (
	"fmt"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Range is how many syscall numbers of each ABI are measured: 0..1023, and
// the same with the x32 bit for x32.
const Range = 1024

// Report is the measurement of one program against one policy.
type Report struct {
	Instructions int
	// Uniform: instructions executed per syscall number, over every
	// number of the range of every ABI (calls with argument rules count
	// as the mean over their argument vectors).
	UniformMean float64
	UniformMax  int
	// ArgRules: instructions executed for syscalls whose verdict depends
	// on arguments, mean over every (syscall, argument vector).
	ArgRulesMean float64
	ArgRulesMax  int
	// NotCacheable lists syscalls that the policy and the program allow
	// whatever the arguments but whose verdict the kernel's action cache
	// cannot hold.
	NotCacheable []string
	// Mismatches lists inputs where the program and the policy disagree.
	Mismatches []Mismatch
	Inputs     int
}

// Mismatch is an input the program decides differently from the policy.
type Mismatch struct {
	Arch    syscalls.Arch
	Nr      uint32
	Args    [policy.MaxArgs]uint64
	Want    policy.Action
	Got     policy.Action
	Syscall string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s %s (%#x) args %x: policy %s, program %s", m.Arch, m.Syscall, m.Nr, m.Args, m.Want, m.Got)
}

// Measure runs prog on every syscall number of the range for each ABI of r.
func Measure(prog []bpf.Instruction, r *policy.Resolved) (*Report, error) {
	rep := &Report{Instructions: len(prog)}
	var uniformSum, argSum float64
	var uniformN, argN int
	for _, t := range r.Tables {
		base := uint32(0)
		if t.Arch == syscalls.X32 {
			base = syscalls.X32Bit
		}
		for nr := base; nr < base+Range; nr++ {
			s, err := measureSyscall(prog, r, t, nr, rep)
			if err != nil {
				return nil, err
			}
			uniformSum += s.mean
			uniformN++
			rep.UniformMax = max(rep.UniformMax, s.max)
			if s.argRules {
				argSum += s.sum
				argN += s.n
				rep.ArgRulesMax = max(rep.ArgRulesMax, s.max)
			}
		}
	}
	if uniformN > 0 {
		rep.UniformMean = uniformSum / float64(uniformN)
	}
	if argN > 0 {
		rep.ArgRulesMean = argSum / float64(argN)
	}
	return rep, nil
}

type syscallStats struct {
	sum, mean float64
	n, max    int
	argRules  bool
}

func measureSyscall(prog []bpf.Instruction, r *policy.Resolved, t *policy.Table, nr uint32, rep *Report) (syscallStats, error) {
	branches := t.Syscalls[nr]
	vectors := policy.ArgVectors(branches)
	s := syscallStats{argRules: hasConds(branches)}
	name, _ := syscalls.Name(t.Arch, nr)
	for _, args := range vectors {
		in := bpf.SeccompData{Nr: nr, Arch: t.Arch.AuditArch(), Args: args}
		res, err := bpf.Run(prog, &in)
		if err != nil {
			return s, fmt.Errorf("measure: %s syscall %d: %w", t.Arch, nr, err)
		}
		rep.Inputs++
		s.sum += float64(res.Executed)
		s.n++
		s.max = max(s.max, res.Executed)
		want := r.Decide(in.Arch, nr, args)
		if got := policy.ActionFromRet(res.Ret); res.Ret != want.Ret() {
			rep.Mismatches = append(rep.Mismatches, Mismatch{Arch: t.Arch, Nr: nr, Args: args, Want: want, Got: got, Syscall: name})
		}
		if want == policy.ActAllow && res.Ret == policy.RetAllow && !s.argRules && !res.KernelCacheable {
			rep.NotCacheable = append(rep.NotCacheable, fmt.Sprintf("%s/%s", t.Arch, name))
		}
	}
	s.mean = s.sum / float64(s.n)
	return s, nil
}

func hasConds(branches []policy.Branch) bool {
	for _, b := range branches {
		if len(b.Conds) > 0 {
			return true
		}
	}
	return false
}
