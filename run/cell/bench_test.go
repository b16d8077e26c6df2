package cell_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// loopCalls is how many getpid calls prog makes per round; it makes 9.
const loopCalls = "1000000"

// BenchmarkGetpid times an allowed getpid made by libgetpid.so (prog's
// loop mode: 9 rounds of a million calls each) with no filter, under the
// whole-process filter of the same policy (number-only, cacheable), and
// with compartments (through the stub, decided on the instruction
// pointer), the three taking turns so that the machine's noise falls on
// all alike. It reports the median of each and what compartments add.
func BenchmarkGetpid(b *testing.B) {
	dir := fixtures(b)
	prog := filepath.Join(dir, progName)
	p := loadPolicy(b, "prog.toml")
	runs := map[string]func() (string, error){
		"none": func() (string, error) {
			out, err := exec.Command(prog, "loop", dir, loopCalls).Output()
			return string(out), err
		},
		"whole-process": func() (string, error) {
			var out bytes.Buffer
			r := p.Resolve([]syscalls.Arch{syscalls.X86_64})
			cmd := enforce.Command{Path: prog, Args: []string{prog, "loop", dir, loopCalls}, Stdout: &out}
			res, err := enforce.Run(context.Background(), r, cmd, enforce.Options{})
			return out.String(), exitErr(err, res.ExitCode)
		},
		"compartments": func() (string, error) {
			var out bytes.Buffer
			cmd := enforce.Command{Path: prog, Args: []string{prog, "loop", dir, loopCalls}, Stdout: &out}
			res, err := cell.Run(context.Background(), p, cmd, cell.Options{Library: filepath.Join(dir, auditLib)})
			if err == nil && len(res.Supervised) > 0 {
				err = fmt.Errorf("supervised calls in the loop: %+v", res.Supervised)
			}
			return out.String(), exitErr(err, res.ExitCode)
		},
	}
	order := []string{"none", "whole-process", "compartments"}
	rounds := map[string][]float64{}
	for range b.N {
		for _, name := range order {
			out, err := runs[name]()
			if err != nil {
				b.Fatalf("%s: %v\n%s", name, err, out)
			}
			rounds[name] = append(rounds[name], parseRounds(b, out)...)
		}
	}
	for _, name := range order {
		b.ReportMetric(median(rounds[name]), "ns/getpid-"+name)
	}
	b.ReportMetric(median(rounds["compartments"])-median(rounds["none"]), "ns-added/getpid")
	b.ReportMetric(median(rounds["compartments"])-median(rounds["whole-process"]), "ns-over-whole-process/getpid")
}

func exitErr(err error, code int) error {
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	return err
}

// parseRounds reads prog's "round NS" lines.
func parseRounds(b *testing.B, out string) []float64 {
	var ns []float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		v, ok := strings.CutPrefix(line, "round ")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			b.Fatalf("prog printed %q", line)
		}
		ns = append(ns, f)
	}
	return ns
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSupervisedGetpid times an allowed getpid that libgetpid.so makes
// through a pointer to libc's wrapper, which the supervisor decides: a
// notification, the thread's /proc line and stack, and an owner found in
// the call-chain cache after the first call.
func BenchmarkSupervisedGetpid(b *testing.B) {
	dir := fixtures(b)
	prog := filepath.Join(dir, progName)
	var rounds []float64
	for range b.N {
		var out bytes.Buffer
		cmd := enforce.Command{Path: prog, Args: []string{prog, "indirect", dir, "2000"}, Stdout: &out}
		res, err := cell.Run(context.Background(), loadPolicy(b, "prog.toml"), cmd, cell.Options{Library: filepath.Join(dir, auditLib)})
		if err = exitErr(err, res.ExitCode); err != nil {
			b.Fatal(err)
		}
		if len(res.Supervised) != 1 || res.Supervised[0].Owner != "libgetpid.so" || !res.Supervised[0].Allowed {
			b.Fatalf("supervised: %+v", res.Supervised)
		}
		rounds = append(rounds, parseRounds(b, out.String())...)
	}
	b.ReportMetric(median(rounds), "ns/getpid-supervised")
}
