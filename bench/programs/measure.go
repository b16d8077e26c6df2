package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Workload is the figures of one workload.
type Workload struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	// Ways holds each way's times in milliseconds, every sample of every
	// round, and their median.
	Ways []Way `json:"ways"`
	// Supervised is, per way with compartments (cell, reach, widened),
	// the share of the calls that ran that the supervisor decided, in
	// percent; -1 where the kernel's calls could not be counted.
	Supervised map[string]float64 `json:"supervised_percent"`
}

// Way is how a workload ran under one way.
type Way struct {
	Name   string    `json:"name"`
	Times  []float64 `json:"times_ms"`
	Median float64   `json:"median_ms"`
	// Ratio is Median over plain's.
	Ratio float64 `json:"ratio"`
}

// way is a way of running a command.
type way struct {
	name string
	// prefix goes before the command; policy, if set, names the policy
	// the prefix ends with.
	prefix func(b *bench, policy string) []string
	policy string
}

func (b *bench) ways(cell, reach string) []way {
	run := func(flags ...string) func(*bench, string) []string {
		return func(b *bench, policy string) []string {
			return append(append([]string{b.syscell, "run", "-q"}, flags...), "--policy", policy, "--")
		}
	}
	return []way{
		{name: "plain", prefix: func(*bench, string) []string { return nil }},
		{name: "whole", prefix: run("--whole-process"), policy: cell},
		{name: "cell", prefix: run(), policy: cell},
		{name: "reach", prefix: run(), policy: reach},
		{name: "widened", prefix: run("--widen", "static"), policy: cell},
	}
}

// measure records w, times it every way, and takes the supervised
// shares.
func (b *bench) measure(ctx context.Context, w workload) (Workload, error) {
	args, err := w.command(b.dir)
	if err != nil {
		return Workload{}, fmt.Errorf("input: %w", err)
	}
	cell := filepath.Join(b.dir, w.name+".toml")
	reach := filepath.Join(b.dir, w.name+"-reach.toml")
	progress("%s: recording %s", w.name, strings.Join(args, " "))
	if err := b.syscellRun(ctx, args, "record", "-q", "-o", cell, "--"); err != nil {
		return Workload{}, err
	}
	if err := b.syscellRun(ctx, args, "record", "-q", "--bound", "static", "-o", reach, "--"); err != nil {
		return Workload{}, err
	}
	ways := b.ways(cell, reach)
	res := Workload{Name: w.name, Command: args, Ways: make([]Way, len(ways)), Supervised: map[string]float64{}}
	for i, wy := range ways {
		res.Ways[i].Name = wy.name
	}
	for r := range b.rounds {
		for k := range ways {
			i := (k + r) % len(ways)
			cmd := slices.Concat(ways[i].prefix(b, ways[i].policy), args)
			for range w.samples {
				took, err := timed(ctx, cmd)
				if err != nil {
					return Workload{}, err
				}
				res.Ways[i].Times = append(res.Ways[i].Times, took)
			}
		}
		progress("%s: round %d of %d", w.name, r+1, b.rounds)
	}
	for i := range res.Ways {
		res.Ways[i].Median = median(res.Ways[i].Times)
		res.Ways[i].Ratio = res.Ways[i].Median / median(res.Ways[0].Times)
	}
	for _, wy := range ways[2:] {
		if res.Supervised[wy.name], err = b.supervisedShare(ctx, wy.prefix(b, wy.policy), args); err != nil {
			return Workload{}, err
		}
	}
	return res, nil
}

// syscellRun runs syscell with flags, then args, discarding the
// program's output.
func (b *bench) syscellRun(ctx context.Context, args []string, flags ...string) error {
	cmd := exec.CommandContext(ctx, b.syscell, slices.Concat(flags, args)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail([]byte(stderr.String())))
	}
	return nil
}

// timed runs args and returns how long it took, in milliseconds.
func timed(ctx context.Context, args []string) (float64, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	if err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, tail([]byte(stderr.String())))
	}
	return float64(took.Microseconds()) / 1000, nil
}

// report is what of syscell run's --report the share is taken from.
type report struct {
	Supervised []struct {
		Allowed bool `json:"allowed"`
		Count   int  `json:"count"`
	} `json:"supervised"`
	Kernel []struct {
		Calls uint64 `json:"calls"`
	} `json:"kernel"`
}

// supervisedShare runs args as prefix (a syscell run command) does, with
// --stats, and returns the percentage of the calls that ran that the
// supervisor decided.
func (b *bench) supervisedShare(ctx context.Context, prefix, args []string) (float64, error) {
	path := filepath.Join(b.dir, "report.json")
	flags := slices.Concat(prefix[1:3], []string{"--stats", "--report", path}, prefix[3:])
	if err := b.syscellRun(ctx, args, flags...); err != nil {
		return 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var ran, supervised uint64
	for _, k := range r.Kernel {
		ran += k.Calls
	}
	for _, s := range r.Supervised {
		if s.Allowed {
			supervised += uint64(s.Count)
		}
	}
	if ran == 0 {
		return -1, nil
	}
	return 100 * float64(supervised) / float64(ran), nil
}

// table is the results as a Markdown table.
func (r *Results) table() string {
	var b strings.Builder
	b.WriteString("| workload | plain | whole ÷ plain | cell ÷ plain | reach ÷ plain | widened ÷ plain | supervised (cell, reach, widened) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, w := range r.Workloads {
		fmt.Fprintf(&b, "| %s | %.2f ms |", w.Name, w.Ways[0].Median)
		for _, wy := range w.Ways[1:] {
			fmt.Fprintf(&b, " %.2f× (%+.2f ms) |", wy.Ratio, wy.Median-w.Ways[0].Median)
		}
		fmt.Fprintf(&b, " %s, %s, %s |\n", percent(w.Supervised["cell"]), percent(w.Supervised["reach"]), percent(w.Supervised["widened"]))
	}
	return b.String()
}

func percent(p float64) string {
	if p < 0 {
		return "not counted"
	}
	return fmt.Sprintf("%.1f %%", p)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// tail is the end of a command's output, for an error.
func tail(out []byte) string {
	const keep = 2000
	if len(out) > keep {
		out = out[len(out)-keep:]
	}
	return string(out)
}
