// Command programs measures ordinary programs under syscell run, for
// docs/PERFORMANCE.md (Programs): the targets of per-library enforcement
// on programs that exec, start, and make their calls through libc.
//
//	exec   a shell script that runs /bin/true 200 times
//	start  /bin/true alone: what syscell run adds to a program's start
//	tools  sed 's/1/x/g' on 200,000 lines, openssl dgst -sha256 on 20 MB,
//	       gzip -c on 20 MB, sort on 200,000 lines
//
// Each workload is recorded once (syscell record, on the input it is
// measured with), and once more with --bound static, whose policy also
// says what each compartment's code can reach. Then every way of running
// it takes turns, round by round, so that a drift of the shared machine
// hits each alike:
//
//	plain    the program alone
//	whole    syscell run --whole-process: the union as one filter
//	cell     syscell run: per-library compartments, the recorded policy
//	reach    syscell run: the policy recorded with --bound static
//	widened  syscell run --widen static: the recorded policy, each
//	         compartment widened with every call its code can make
//
// Figures are medians over the rounds, and every ratio is to plain's
// median of the same invocation. For each way with compartments, one
// more run with --stats --report (as root, the kernel's counts) gives
// the share of the calls that ran that the supervisor decided.
//
// bench/programs/run.sh builds what it needs and runs it:
//
//	programs -syscell BIN [-rounds R] [-json FILE] exec|start|tools...
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	b := &bench{}
	flag.StringVar(&b.syscell, "syscell", "bin/syscell", "the syscell binary, its audit library next to it")
	flag.IntVar(&b.rounds, "rounds", 5, "interleaved rounds of each measure")
	jsonOut := flag.String("json", "", "write the figures to `FILE` as JSON")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: programs -syscell BIN [-rounds R] [-json FILE] exec|start|tools...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := b.run(ctx, flag.Args())
	if err == nil {
		fmt.Print(res.table())
	}
	if err == nil && *jsonOut != "" {
		var data []byte
		if data, err = json.MarshalIndent(res, "", "  "); err == nil {
			err = os.WriteFile(*jsonOut, append(data, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "programs:", err)
		os.Exit(1)
	}
}

// bench is one invocation.
type bench struct {
	syscell string
	rounds  int
	// dir holds the inputs and the policies.
	dir string
}

// Results are the figures of an invocation.
type Results struct {
	Command   string     `json:"command"`
	Rounds    int        `json:"rounds"`
	Workloads []Workload `json:"workloads"`
}

func (b *bench) run(ctx context.Context, what []string) (*Results, error) {
	dir, err := os.MkdirTemp("", "syscell-programs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b.dir = dir
	res := &Results{Command: strings.Join(os.Args, " "), Rounds: b.rounds}
	for _, name := range what {
		ws, ok := workloads[name]
		if !ok {
			return nil, fmt.Errorf("unknown measure %q (want exec, start or tools)", name)
		}
		for _, w := range ws {
			r, err := b.measure(ctx, w)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
			res.Workloads = append(res.Workloads, r)
		}
	}
	return res, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "programs: "+format+"\n", args...)
}
