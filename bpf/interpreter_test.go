package bpf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// vector is one run of a program of testdata/run.txtar.
type vector struct {
	name string
	prog []Instruction
	in   SeccompData
	want Result
}

// readVectors reads testdata/run.txtar.
func readVectors(t *testing.T) []vector {
	t.Helper()
	var vs []vector
	for _, s := range readArchive(t, "testdata/run.txtar") {
		prog := mustAssemble(t, s.text)
		runs := 0
		for _, line := range strings.Split(s.text, "\n") {
			spec, ok := strings.CutPrefix(line, "; run:")
			if !ok {
				continue
			}
			in, want, err := parseRun(spec)
			if err != nil {
				t.Fatalf("%s: %q: %v", s.name, line, err)
			}
			vs = append(vs, vector{name: fmt.Sprintf("%s/%d", s.name, runs), prog: prog, in: in, want: want})
			runs++
		}
		if runs == 0 {
			t.Fatalf("%s: no run lines", s.name)
		}
	}
	return vs
}

// parseRun reads "INPUT -> RET executed=N flags...".
func parseRun(spec string) (SeccompData, Result, error) {
	input, expect, ok := strings.Cut(spec, "->")
	if !ok {
		return SeccompData{}, Result{}, fmt.Errorf("no ->")
	}
	var in SeccompData
	for _, field := range strings.Fields(input) {
		key, value, _ := strings.Cut(field, "=")
		n, err := strconv.ParseUint(value, 0, 64)
		if err != nil {
			return in, Result{}, err
		}
		switch {
		case key == "nr":
			in.Nr = uint32(n)
		case key == "arch":
			in.Arch = uint32(n)
		case key == "ip":
			in.IP = n
		case len(key) == 2 && key[0] == 'a' && key[1] >= '0' && key[1] <= '5':
			in.Args[key[1]-'0'] = n
		default:
			return in, Result{}, fmt.Errorf("unknown input field %q", key)
		}
	}
	fields := strings.Fields(expect)
	if len(fields) == 0 {
		return in, Result{}, fmt.Errorf("no return value")
	}
	ret, err := Assemble("ret " + fields[0])
	if err != nil {
		return in, Result{}, err
	}
	want := Result{Ret: ret[0].K}
	for _, f := range fields[1:] {
		switch {
		case strings.HasPrefix(f, "executed="):
			want.Executed, err = strconv.Atoi(strings.TrimPrefix(f, "executed="))
		case f == "reads-args":
			want.ReadsArgs = true
		case f == "reads-ip":
			want.ReadsIP = true
		case f == "cacheable":
			want.KernelCacheable = true
		default:
			err = fmt.Errorf("unknown expectation %q", f)
		}
		if err != nil {
			return in, want, err
		}
	}
	return in, want, nil
}

func TestRun(t *testing.T) {
	for _, v := range readVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			got, err := Run(v.prog, &v.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != v.want {
				t.Fatalf("Run = %+v (%s), want %+v (%s)", got, formatRet(got.Ret), v.want, formatRet(v.want.Ret))
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog string
		want string
	}{
		{"empty", "", "runs past the end"},
		{"falls off the end", "ld [0]", "runs past the end"},
		{"jumps off the end", "ja +3\nret a", "instruction 0 (ja +3) jumps past the end"},
		{"jumps to the end", "ja +1\nret a", "instruction 0 (ja +1) jumps past the end"},
		{"jumps around the address space", "ja 4294967296\nret a", "instruction 0 (ja +4294967295) jumps past the end"},
		{"conditional jumps off the end", "jeq #0x0, +2, +0\nret a", "runs past the end"},
		{"misaligned load", "ld [1]\nret a", "instruction 0 (ld [1]) loads outside"},
		{"load past the end", "ret ALLOW\nld [64]", ""},
		{"load past the data", "ld #0x0\nld [64]\nret a", "instruction 1 (ld [64]) loads outside"},
		{"half-word load", "ldh [0]\nret a", "instruction 0 (ldh [0]) is a load seccomp does not run"},
		{"scratch read past M[15]", "ld M[16]\nret a", "instruction 0 (ld M[16]) reads a scratch word past M[15]"},
		{"scratch write past M[15]", "st M[16]\nret a", "instruction 0 (st M[16]) is not a store"},
		{"store with size bits", "raw 0x0a, 0, 0, 0\nret a", "instruction 0 (raw 0x0a, 0, 0, 0x0) is not a store"},
		{"return x", "ret x", "instruction 0 (ret x) is not a known instruction"},
		{"unknown misc", "raw 0x0f, 0, 0, 0\nret a", "instruction 0 (raw 0x0f, 0, 0, 0x0) is not a known instruction"},
		{"neg with x", "raw 0x8c, 0, 0, 0\nret a", "is not a known arithmetic instruction"},
		{"ebpf mov", "raw 0xb4, 0, 0, 0\nret a", "is not a known arithmetic instruction"},
		{"ja with x", "raw 0x0d, 0, 0, 0\nret a", "is not a known jump"},
		{"jump with high bits", "raw 0x11d, 0, 0, 0\nret a", "is not a known jump"},
		{"jump op 0x50", "raw 0x5d, 0, 0, 0\nret a", "is not a known jump"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := mustAssemble(t, tc.prog)
			_, err := Run(prog, &SeccompData{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Run: %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCoverage(t *testing.T) {
	prog := mustAssemble(t, `
		ld [4]
		jeq #0xc000003e, +0, kill
		ld [0]
		jge #0x100, big, +0
		jeq #0x1, allow, +0
		ret ERRNO(1)
	big:
		ret ERRNO(2)
	allow:
		ret ALLOW
	kill:
		ret KILL_PROCESS
	`)
	var cov Coverage
	steps := []struct {
		in      SeccompData
		missing []string
	}{
		{SeccompData{Nr: 1, Arch: 0xc000003e}, []string{
			"0001: jeq #0xc000003e, 2, 8: false branch (to 8) never taken",
			"0003: jge #0x100, 6, 4: true branch (to 6) never taken",
			"0004: jeq #0x1, 7, 5: false branch (to 5) never taken",
			"0005: ret ERRNO(1): never executed",
			"0006: ret ERRNO(2): never executed",
			"0008: ret KILL_PROCESS: never executed",
		}},
		{SeccompData{Nr: 0x200, Arch: 0xc000003e}, []string{
			"0001: jeq #0xc000003e, 2, 8: false branch (to 8) never taken",
			"0004: jeq #0x1, 7, 5: false branch (to 5) never taken",
			"0005: ret ERRNO(1): never executed",
			"0008: ret KILL_PROCESS: never executed",
		}},
		{SeccompData{Nr: 2, Arch: 0xc000003e}, []string{
			"0001: jeq #0xc000003e, 2, 8: false branch (to 8) never taken",
			"0008: ret KILL_PROCESS: never executed",
		}},
		{SeccompData{Nr: 2}, nil},
	}
	if got, want := len(cov.Missing(prog)), len(prog); got != want {
		t.Fatalf("empty coverage misses %d instructions, want %d", got, want)
	}
	for i, s := range steps {
		if _, err := RunCovered(prog, &s.in, &cov); err != nil {
			t.Fatal(err)
		}
		if got := cov.Missing(prog); !slices.Equal(got, s.missing) {
			t.Fatalf("after run %d, Missing =\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(s.missing, "\n"))
		}
	}
}

// TestRunCoveredMatchesRun checks that recording coverage changes nothing.
func TestRunCoveredMatchesRun(t *testing.T) {
	for _, v := range readVectors(t) {
		var cov Coverage
		got, err := RunCovered(v.prog, &v.in, &cov)
		if err != nil || got != v.want {
			t.Errorf("%s: RunCovered = %+v, %v; want %+v", v.name, got, err, v.want)
		}
	}
}

// benchProgram is a filter of about 100 instructions in the shape syscell
// compiles: an architecture check, a tree over system call numbers, and
// argument checks on 64-bit values.
func benchProgram(b *testing.B) []Instruction {
	var bl Builder
	kill, allow, deny := bl.NewLabel("kill"), bl.NewLabel("allow"), bl.NewLabel("deny")
	bl.Add(LoadAbs(OffsetArch))
	bl.JumpIf(JmpJeq, 0xc000003e, Next, kill)
	bl.Add(LoadAbs(OffsetNr))
	for nr := uint32(0); nr < 40; nr++ {
		next := bl.NewLabel("next")
		if nr%4 == 3 {
			args := bl.NewLabel("args")
			bl.JumpIf(JmpJeq, nr*3, args, next)
			bl.Bind(args)
			bl.Add(LoadAbs(ArgHigh(1)))
			bl.JumpIf(JmpJeq, 0, Next, deny)
			bl.Add(LoadAbs(ArgLow(1)))
			bl.JumpIf(JmpJset, 0x3, deny, allow)
			bl.Bind(next)
			bl.Add(LoadAbs(OffsetNr))
			continue
		}
		bl.JumpIf(JmpJeq, nr*3, allow, Next)
		bl.Bind(next)
	}
	bl.JumpTo(deny)
	bl.Bind(allow)
	bl.Add(Ret(retAllow))
	bl.Bind(deny)
	bl.Add(Ret(retErrno | 1))
	bl.Bind(kill)
	bl.Add(Ret(retKillProcess))
	prog, err := bl.Program()
	if err != nil {
		b.Fatal(err)
	}
	if err := Validate(prog); err != nil {
		b.Fatal(err)
	}
	return prog
}

// BenchmarkRun runs a 100-instruction filter on a call it checks to the
// end, on one it allows early, and through Optimize's output.
func BenchmarkRun(b *testing.B) {
	prog := benchProgram(b)
	for _, bc := range []struct {
		name string
		prog []Instruction
		in   SeccompData
	}{
		{"deny-after-all-checks", prog, SeccompData{Nr: 1000, Arch: 0xc000003e}},
		{"allow-early", prog, SeccompData{Nr: 3, Arch: 0xc000003e}},
		{"argument-check", prog, SeccompData{Nr: 33, Arch: 0xc000003e, Args: [6]uint64{1: 4}}},
		{"optimized-deny", Optimize(prog), SeccompData{Nr: 1000, Arch: 0xc000003e}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			res, err := Run(bc.prog, &bc.in)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				Run(bc.prog, &bc.in)
			}
			b.ReportMetric(float64(len(bc.prog)), "insns")
			b.ReportMetric(float64(res.Executed), "executed")
		})
	}
}

func BenchmarkRunCovered(b *testing.B) {
	prog := benchProgram(b)
	in := SeccompData{Nr: 1000, Arch: 0xc000003e}
	var cov Coverage
	b.ReportAllocs()
	for b.Loop() {
		RunCovered(prog, &in, &cov)
	}
}
