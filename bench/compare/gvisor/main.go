//go:build amd64

// Command gvisor compiles a resolved OCI seccomp policy with gVisor's
// pkg/seccomp and writes the program as raw BPF (struct sock_filter[]).
//
// It lives in its own module so that syscell itself never depends on gVisor.
//
//	gvisor [--reps N] [--no-optimize] [--numbers FILE] POLICY.json OUT.bpf
//
// Rules are mapped the way runc maps them for libseccomp, so both baselines
// compile the same policy: ERRNO/TRACE without errnoRet return EPERM, a rule
// whose action is the default action is dropped, and conditions are ANDed
// unless an argument index repeats, in which case each one is a rule of its
// own (OR). Names are resolved with gVisor's own x86_64 syscall table, or
// with --numbers, a JSON object {name: number} (libseccomp.py --numbers-out
// writes the one libseccomp uses), to compile exactly libseccomp's syscall
// set. Names not found are skipped and listed on stderr. gVisor programs
// check a single architecture, the one they are built for, so "architectures"
// is ignored and the command builds on amd64 only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"gvisor.dev/gvisor/pkg/bpf"
	"gvisor.dev/gvisor/pkg/seccomp"
	sentry "gvisor.dev/gvisor/pkg/sentry/syscalls/linux"
)

func main() {
	reps := flag.Int("reps", 101, "build the program this many times; report the median")
	noOptimize := flag.Bool("no-optimize", false, "set ProgramOptions.SkipOptimizations")
	numbers := flag.String("numbers", "", "resolve names with this JSON {name: number} instead of gVisor's table")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: gvisor [--reps N] [--no-optimize] [--numbers FILE] POLICY.json OUT.bpf")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *numbers, *reps, *noOptimize); err != nil {
		fmt.Fprintln(os.Stderr, "gvisor:", err)
		os.Exit(1)
	}
}

func run(policyPath, outPath, numbersPath string, reps int, noOptimize bool) error {
	var policy specs.LinuxSeccomp
	if err := readJSON(policyPath, &policy); err != nil {
		return err
	}
	lookup := gvisorLookup
	if numbersPath != "" {
		var numbers map[string]uintptr
		if err := readJSON(numbersPath, &numbers); err != nil {
			return err
		}
		lookup = func(name string) (uintptr, bool) {
			nr, ok := numbers[name]
			return nr, ok
		}
	}
	table, unknown := resolve(&policy, lookup)
	if len(unknown) > 0 {
		fmt.Fprintln(os.Stderr, "gvisor: skipped unknown syscalls:", strings.Join(unknown, " "))
	}

	// Time the whole path from parsed policy to program, as for libseccomp:
	// converting to gVisor rules, then Build, whose BuildStats split it into
	// phases.
	var insns []bpf.Instruction
	var total, convert, build, ruleOpt, bpfOpt []time.Duration
	for range reps {
		start := time.Now()
		prog, err := program(&policy, table, noOptimize)
		if err != nil {
			return err
		}
		converted := time.Since(start)
		var stats seccomp.BuildStats
		insns, stats, err = prog.Build()
		if err != nil {
			return err
		}
		total = append(total, time.Since(start))
		convert = append(convert, converted)
		build = append(build, stats.BuildDuration)
		ruleOpt = append(ruleOpt, stats.RuleOptimizeDuration)
		bpfOpt = append(bpfOpt, stats.BPFOptimizeDuration)
	}
	if err := os.WriteFile(outPath, bpf.ToBytecode(insns), 0o644); err != nil {
		return err
	}
	fmt.Printf("%d instructions, build %.0f us = convert %.0f + build %.0f + rule-opt %.0f + bpf-opt %.0f (median of %d)\n",
		len(insns), median(total), median(convert), median(build), median(ruleOpt), median(bpfOpt), reps)
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// gvisorLookup uses the table runsc uses for OCI policies: the syscalls
// gVisor's sentry knows on x86_64.
func gvisorLookup(name string) (uintptr, bool) {
	nr, err := sentry.AMD64.LookupNo(name)
	return nr, err == nil
}

// resolve looks every name up once, outside the timed loop, because
// LookupNo scans the whole table.
func resolve(policy *specs.LinuxSeccomp, lookup func(string) (uintptr, bool)) (numbers map[string]uintptr, unknown []string) {
	numbers = make(map[string]uintptr)
	for _, sc := range policy.Syscalls {
		for _, name := range sc.Names {
			if _, seen := numbers[name]; seen || slices.Contains(unknown, name) {
				continue
			}
			if nr, ok := lookup(name); ok {
				numbers[name] = nr
			} else {
				unknown = append(unknown, name)
			}
		}
	}
	slices.Sort(unknown)
	return numbers, unknown
}

// program turns the policy into gVisor rules: one RuleSet per action, in
// the order actions first appear (gVisor uses the first RuleSet that matches).
func program(policy *specs.LinuxSeccomp, table map[string]uintptr, noOptimize bool) (*seccomp.Program, error) {
	defaultAction, err := action(policy.DefaultAction, policy.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	var ruleSets []seccomp.RuleSet
	for _, sc := range policy.Syscalls {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, err
		}
		if act == defaultAction {
			continue
		}
		rule, err := argRule(sc.Args)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", sc.Names, err)
		}
		i := slices.IndexFunc(ruleSets, func(rs seccomp.RuleSet) bool { return rs.Action == act })
		if i < 0 {
			ruleSets = append(ruleSets, seccomp.RuleSet{Rules: seccomp.NewSyscallRules(), Action: act})
			i = len(ruleSets) - 1
		}
		for _, name := range sc.Names {
			if nr, ok := table[name]; ok {
				ruleSets[i].Rules.Add(nr, rule)
			}
		}
	}
	return &seccomp.Program{
		RuleSets: ruleSets,
		Options: seccomp.ProgramOptions{
			DefaultAction: defaultAction,
			// libseccomp's default for a foreign architecture.
			BadArchAction:     seccomp.KillThread,
			SkipOptimizations: noOptimize,
		},
	}, nil
}

func action(act specs.LinuxSeccompAction, errnoRet *uint) (seccomp.Action, error) {
	ret := uint16(syscall.EPERM)
	if errnoRet != nil {
		ret = uint16(*errnoRet)
	}
	switch act {
	case specs.ActKill, specs.ActKillThread:
		return seccomp.KillThread, nil
	case specs.ActKillProcess:
		return seccomp.KillProcess, nil
	case specs.ActTrap:
		return seccomp.Trap, nil
	case specs.ActErrno:
		return seccomp.ReturnError.Code(ret), nil
	case specs.ActTrace:
		return seccomp.Trace.Code(ret), nil
	case specs.ActAllow:
		return seccomp.Allow, nil
	case specs.ActNotify:
		return seccomp.UserNotify, nil
	}
	return "", fmt.Errorf("action %q has no gVisor equivalent", act)
}

// argRule builds the condition of one OCI syscall entry.
func argRule(args []specs.LinuxSeccompArg) (seccomp.SyscallRule, error) {
	if len(args) == 0 {
		return seccomp.MatchAll{}, nil
	}
	var and seccomp.PerArg
	var or seccomp.Or
	repeated := false
	for _, a := range args {
		if a.Index >= 6 {
			return nil, fmt.Errorf("argument index %d out of range", a.Index)
		}
		m, err := matcher(a)
		if err != nil {
			return nil, err
		}
		var single seccomp.PerArg
		single[a.Index] = m
		or = append(or, single)
		repeated = repeated || and[a.Index] != nil
		and[a.Index] = m
	}
	if repeated {
		return or, nil
	}
	return and, nil
}

func matcher(a specs.LinuxSeccompArg) (seccomp.ValueMatcher, error) {
	v := uintptr(a.Value)
	switch a.Op {
	case specs.OpNotEqual:
		return seccomp.NotEqual(v), nil
	case specs.OpLessThan:
		return seccomp.LessThan(v), nil
	case specs.OpLessEqual:
		return seccomp.LessThanOrEqual(v), nil
	case specs.OpEqualTo:
		return seccomp.EqualTo(v), nil
	case specs.OpGreaterEqual:
		return seccomp.GreaterThanOrEqual(v), nil
	case specs.OpGreaterThan:
		return seccomp.GreaterThan(v), nil
	case specs.OpMaskedEqual:
		// OCI (like libseccomp): (arg & value) == valueTwo.
		return seccomp.MaskedEqual(v, uintptr(a.ValueTwo)), nil
	}
	return nil, fmt.Errorf("unknown operator %q", a.Op)
}

func median(ds []time.Duration) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[len(s)/2].Nanoseconds()) / 1000
}
