// Command containers measures syscell's OCI runtime, for
// docs/PERFORMANCE.md (Containers). As root, with runc underneath:
//
//	throughput  redis-benchmark and nginx+wrk against the server in a
//	            container under its per-library policy (recorded in the
//	            container first), and in the same container without
//	            syscell (runc's alone), in interleaved rounds
//	start       the time from run to exit of a container running
//	            /usr/bin/true: runc alone, through syscell's runtime
//	            without annotations, and under a per-library policy
//	scale       one supervisor serving N containers (N-1 idle, their
//	            programs connected): the time of a supervised call in
//	            the Nth, less the same call unsupervised, for N = 1, 8, 32
//
// bench/containers/run.sh builds what it needs and runs it:
//
//	containers -syscell BIN -probe DIR [-rounds R] [-quick] [-json FILE] WHAT...
//
// Figures are medians over the rounds, and ratios are taken between
// figures of the same invocation.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
	"github.com/syscell/syscell/internal/hostservers"
	"github.com/syscell/syscell/supervisor"
)

func main() {
	b := &bench{}
	flag.StringVar(&b.syscell, "syscell", "bin/syscell", "the syscell binary, its audit library next to it")
	flag.StringVar(&b.probe, "probe", "", "the directory of cellprobe and its libraries (integration/testdata/cellprobe, built)")
	flag.IntVar(&b.rounds, "rounds", 5, "interleaved rounds of each measure")
	flag.BoolVar(&b.quick, "quick", false, "short loads")
	jsonOut := flag.String("json", "", "write the figures to `FILE` as JSON")
	flag.Parse()
	if flag.NArg() == 0 || b.probe == "" {
		fmt.Fprintln(os.Stderr, "usage: containers -syscell BIN -probe DIR [-rounds R] [-quick] [-json FILE] throughput|start|scale...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	results, err := b.run(ctx, flag.Args())
	if err == nil && *jsonOut != "" {
		var data []byte
		if data, err = json.MarshalIndent(results, "", "  "); err == nil {
			err = os.WriteFile(*jsonOut, append(data, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "containers:", err)
		os.Exit(1)
	}
}

// bench is one invocation: a supervisor, and syscell's runtime over runc.
type bench struct {
	syscell, probe string
	rounds         int
	quick          bool

	dir   string
	dirs  supervisor.Dirs
	runc  string
	state string
	sup   *exec.Cmd
	log   string
	// n numbers the containers.
	n int
}

// Results are the figures of an invocation.
type Results struct {
	Command    string             `json:"command"`
	Rounds     int                `json:"rounds"`
	Throughput []ThroughputResult `json:"throughput,omitempty"`
	Start      *StartResult       `json:"start,omitempty"`
	Scale      []ScaleResult      `json:"scale,omitempty"`
}

func (b *bench) run(ctx context.Context, what []string) (*Results, error) {
	if err := b.setUp(); err != nil {
		return nil, err
	}
	defer b.tearDown()
	res := &Results{Command: strings.Join(os.Args, " "), Rounds: b.rounds}
	for _, w := range what {
		var err error
		switch w {
		case "throughput":
			for _, srv := range hostservers.All {
				var r ThroughputResult
				if r, err = b.throughput(ctx, srv); err == nil {
					res.Throughput = append(res.Throughput, r)
				}
				if err != nil {
					break
				}
			}
		case "start":
			res.Start, err = b.start(ctx)
		case "scale":
			res.Scale, err = b.scale(ctx)
		default:
			err = fmt.Errorf("unknown measure %q", w)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w, err)
		}
	}
	return res, nil
}

// setUp starts a supervisor with its directories in a fresh one.
func (b *bench) setUp() error {
	if os.Geteuid() != 0 {
		return errors.New("containers run as root")
	}
	var err error
	if b.runc, err = exec.LookPath("runc"); err != nil {
		if b.runc, err = exec.LookPath("/usr/sbin/runc"); err != nil {
			return err
		}
	}
	if b.dir, err = os.MkdirTemp("", "syscell-containers-"); err != nil {
		return err
	}
	b.dirs = supervisor.Dirs{State: filepath.Join(b.dir, "state"), PolicyDir: filepath.Join(b.dir, "policies"), RecordDir: filepath.Join(b.dir, "recordings")}
	b.state = filepath.Join(b.dir, "runc")
	for _, d := range []string{b.dirs.PolicyDir, b.dirs.RecordDir, b.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	b.log = filepath.Join(b.dir, "supervise.log")
	logFile, err := os.Create(b.log)
	if err != nil {
		return err
	}
	defer logFile.Close()
	b.sup = exec.Command(b.syscell, "supervise", "--dir", b.dirs.State, "--policy-dir", b.dirs.PolicyDir, "--record-dir", b.dirs.RecordDir)
	b.sup.Stdout, b.sup.Stderr = logFile, logFile
	if err := b.sup.Start(); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := supervisor.Dial(b.dirs.State)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the supervisor does not listen: %w", err)
		}
	}
}

func (b *bench) tearDown() {
	if b.sup != nil {
		b.sup.Process.Signal(syscall.SIGTERM)
		b.sup.Wait()
	}
	os.RemoveAll(b.dir)
}

// shim is syscell's runtime over runc, with args.
func (b *bench) shim(args ...string) *exec.Cmd {
	return exec.Command(b.syscell, append([]string{"oci", "--syscell-dir", b.dirs.State, "--syscell-delegate", b.runc, "--root", b.state}, args...)...)
}

// bundle writes a bundle, and returns its directory and a container id.
func (b *bench) bundle(o hostbundle.Options) (string, string, error) {
	b.n++
	dir := filepath.Join(b.dir, "bundles", strconv.Itoa(b.n))
	id := fmt.Sprintf("syscell-bench-%d-%d", os.Getpid(), b.n)
	return dir, id, hostbundle.Write(dir, o)
}

// probeFiles are cellprobe's files, in the containers.
func (b *bench) probeFiles() map[string]string {
	files := map[string]string{}
	for _, f := range []string{"cellprobe", "libmaymk.so", "libnomk.so"} {
		files["/opt/cellprobe/"+f] = filepath.Join(b.probe, f)
	}
	return files
}

// waitRecording waits for recording name of container id, and installs
// it as the policy of that name.
func (b *bench) waitRecording(name, id string) error {
	path := filepath.Join(b.dirs.RecordDir, name, id+".toml")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		data, err := os.ReadFile(path)
		if err == nil {
			return os.WriteFile(filepath.Join(b.dirs.PolicyDir, name+".toml"), data, 0o644)
		}
	}
	return fmt.Errorf("no recording %s (see %s)", path, b.log)
}

// session is what the supervisor logged of container id once its
// programs ended: the calls it decided and denied, and its median time
// to decide one.
type session struct {
	decided, denied int
	median          time.Duration
}

func (b *bench) session(id string) (session, error) {
	re := regexp.MustCompile(`container ` + regexp.QuoteMeta(id) + `: process \d+ and its descendants ended: (\d+) calls supervised, (\d+) denied; a call decided in (\S+) \(median\)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(b.log)
		if m := re.FindSubmatch(data); m != nil {
			var s session
			s.decided, _ = strconv.Atoi(string(m[1]))
			s.denied, _ = strconv.Atoi(string(m[2]))
			var err error
			s.median, err = time.ParseDuration(string(m[3]))
			return s, err
		}
	}
	return session{}, fmt.Errorf("container %s: the supervisor did not log its end (see %s)", id, b.log)
}

// median of xs, which it sorts.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// progress says what the harness does, on standard error.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "containers: "+format+"\n", args...)
}

// discard is where the output of containers the harness does not read
// goes.
var discard io.Writer = io.Discard
