//go:build linux

package record_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/syscell/syscell/fixtures"
	"github.com/syscell/syscell/record"
)

// BenchmarkGetpidOverhead measures what recording adds to a system call:
// prog's loop of 1,000,000 getpid calls made by libgetpid.so (the
// program's own clock, around the loop), untraced, recorded, recorded by
// phase while starting (the default serving calls, none of which the loop
// makes: each call looks its process's phase up and its number among the
// serving calls) and while serving (from the first getpid: each call
// finds its thread's note that its process serves), and untraced while
// another program is recorded (what every other process on the machine
// pays), in turn, once per iteration. It reports the medians, the
// differences, and the ratios of the costs added by phase to the cost
// added without. Run with -benchtime=Nx: each iteration runs the loop five
// times.
func BenchmarkGetpidOverhead(b *testing.B) {
	dir := fixtureDir(b)
	args := []string{filepath.Join(dir, fixtures.Prog), "loop", "1000000"}
	var plain, recorded, starting, serving, bystander []float64
	for b.Loop() {
		plain = append(plain, nsPerCall(b, exec.Command(args[0], args[1:]...)))
		out, rec := recordOutput(b, args)
		if rec.Lossy() {
			b.Fatalf("lossy recording:\n%s", rec.Summary())
		}
		recorded = append(recorded, parseFloat(b, out))
		for _, phase := range []struct {
			servingFrom []string
			ns          *[]float64
		}{{record.DefaultServingFrom, &starting}, {[]string{"getpid"}, &serving}} {
			out, rec = recordOutput(b, args, record.Options{ServingFrom: phase.servingFrom})
			if rec.Lossy() || !rec.Phased() {
				b.Fatalf("lossy or unphased recording:\n%s", rec.Summary())
			}
			*phase.ns = append(*phase.ns, parseFloat(b, out))
		}
		bystander = append(bystander, whileRecording(b, exec.Command(args[0], args[1:]...)))
	}
	b.ReportMetric(median(plain), "ns/call-untraced")
	b.ReportMetric(median(recorded), "ns/call-recorded")
	b.ReportMetric(median(recorded)-median(plain), "ns/call-added")
	added := median(recorded) - median(plain)
	b.ReportMetric((median(starting)-median(plain))/added, "added-by-phase-starting/added")
	b.ReportMetric((median(serving)-median(plain))/added, "added-by-phase-serving/added")
	b.ReportMetric(median(bystander)-median(plain), "ns/call-added-to-others")
}

// BenchmarkRate records 5,000,000 getpid calls made at 1,000,000 calls per
// second (paced by prog itself), and at full speed, and reports the rate
// reached and the events lost, which must be none.
func BenchmarkRate(b *testing.B) {
	dir := fixtureDir(b)
	prog := filepath.Join(dir, fixtures.Prog)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"1M-per-second", []string{prog, "rate", "5000000", "1000000"}},
		{"full-speed", []string{prog, "loop", "5000000"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var lost, snapshots uint64
			var rates []float64
			for b.Loop() {
				out, rec := recordOutput(b, c.args)
				lost += rec.Lost.Total()
				snapshots += rec.Stats.Snapshots
				rate := parseFloat(b, out)
				if c.args[1] == "loop" {
					rate = 1e9 / rate
				}
				rates = append(rates, rate)
			}
			b.ReportMetric(median(rates), "calls/s")
			b.ReportMetric(float64(lost)/float64(b.N), "lost/run")
			b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/run")
		})
	}
}

// whileRecording runs cmd untraced while the recorder records another
// program, and returns cmd's nanoseconds per call. The other program says
// when it runs, which it does only once the recorder is attached.
func whileRecording(b *testing.B, cmd *exec.Cmd) float64 {
	b.Helper()
	other := exec.Command("sh", "-c", "echo running; read line")
	stdin, err := other.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := other.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := record.Run(context.Background(), other, record.Options{})
		done <- err
	}()
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	ns := nsPerCall(b, cmd)
	stdin.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return ns
}

// recordOutput records args, with opts if given, and returns what the
// program printed.
func recordOutput(b *testing.B, args []string, opts ...record.Options) (string, *record.Recording) {
	b.Helper()
	var out bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = &out
	var o record.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	rec, state, err := record.Run(context.Background(), cmd, o)
	if err != nil {
		b.Fatal(err)
	}
	if !state.Success() {
		b.Fatalf("%v: %v", args, state)
	}
	return out.String(), rec
}

func nsPerCall(b *testing.B, cmd *exec.Cmd) float64 {
	b.Helper()
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	return parseFloat(b, string(out))
}

func parseFloat(b *testing.B, s string) float64 {
	b.Helper()
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		b.Fatal(fmt.Errorf("program output %q: %w", s, err))
	}
	return v
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
