package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
)

// scaleCounts are the numbers of containers one supervisor serves.
var scaleCounts = []int{1, 8, 32}

// scaleCalls is how many supervised calls a loop makes, and scaleLoops
// how many loops one measure runs (their median is the measure).
const (
	scaleCalls = 20000
	scaleLoops = 3
)

// ScaleResult is the cost of a supervised call with N containers served.
type ScaleResult struct {
	Containers int `json:"containers"`
	// Supervised are the nanoseconds of a supervised getpid, by round;
	// Plain those of the same call in a container without syscell;
	// Deciding the supervisor's median time from receiving a call to
	// answering it.
	Supervised []float64 `json:"supervised_ns"`
	Plain      []float64 `json:"plain_ns"`
	Deciding   []float64 `json:"deciding_ns"`
	// Added is the medians' difference; RatioToOne the median, over the
	// rounds, of the added cost over the added cost with one container
	// in the same round (the noise of this shared machine moves whole
	// rounds).
	Added      float64 `json:"added_ns"`
	RatioToOne float64 `json:"ratio_to_one"`
}

// idle is a container whose program waits on its standard input,
// connected to the supervisor.
type idle struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// scale measures cellprobe loop in a container while the supervisor
// serves N-1 other containers, whose programs wait, for each N in turn;
// and the same loop without syscell.
func (b *bench) scale(ctx context.Context) ([]ScaleResult, error) {
	policy, err := b.recordLoop()
	if err != nil {
		return nil, err
	}
	var idles []*idle
	defer func() {
		for _, c := range idles {
			c.stop()
		}
	}()
	results := make([]ScaleResult, len(scaleCounts))
	for r := range b.rounds {
		order := slices.Clone(scaleCounts)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		plain, _, err := b.loops(nil)
		if err != nil {
			return nil, err
		}
		for _, n := range order {
			for len(idles) < n-1 {
				c, err := b.startIdle(policy)
				if err != nil {
					return nil, err
				}
				idles = append(idles, c)
			}
			for len(idles) > n-1 {
				idles[len(idles)-1].stop()
				idles = idles[:len(idles)-1]
			}
			ns, s, err := b.loops(map[string]string{"syscell.policy": policy})
			if err != nil {
				return nil, err
			}
			i := slices.Index(scaleCounts, n)
			results[i].Containers = n
			results[i].Supervised = append(results[i].Supervised, ns)
			results[i].Plain = append(results[i].Plain, plain)
			results[i].Deciding = append(results[i].Deciding, float64(s.median.Nanoseconds()))
			progress("scale: round %d: %d containers: %.0f ns a supervised call (the supervisor: %v), %.0f ns plain", r+1, n, ns, s.median, plain)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	for i := range results {
		r := &results[i]
		r.Added = median(append([]float64(nil), r.Supervised...)) - median(append([]float64(nil), r.Plain...))
		var ratios []float64
		for round := range r.Supervised {
			one := results[0].Supervised[round] - results[0].Plain[round]
			ratios = append(ratios, (r.Supervised[round]-r.Plain[round])/one)
		}
		r.RatioToOne = median(ratios)
	}
	return results, nil
}

// recordLoop records cellprobe's loop and wait modes in containers, and
// merges them into the policy the measures run under.
func (b *bench) recordLoop() (string, error) {
	const policy = "bench-loop"
	var recordings []string
	for _, args := range [][]string{{"loop", "1000"}, {"wait", "/tmp"}} {
		name := policy + "-" + args[0]
		bundle, id, err := b.bundle(hostbundle.Options{Args: append([]string{"/opt/cellprobe/cellprobe"}, args...), Files: b.probeFiles(), Annotations: map[string]string{"syscell.record": name}})
		if err != nil {
			return "", err
		}
		cmd := b.shim("run", "--bundle", bundle, id)
		cmd.Stdin = strings.NewReader("go\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("record %s: %v\n%s", args[0], err, out)
		}
		if err := b.waitRecording(name, id); err != nil {
			return "", err
		}
		recordings = append(recordings, "--merge", b.dirs.PolicyDir+"/"+name+".toml")
	}
	merge := exec.Command(b.syscell, append([]string{"record", "-o", b.dirs.PolicyDir + "/" + policy + ".toml"}, recordings...)...)
	if out, err := merge.CombinedOutput(); err != nil {
		return "", fmt.Errorf("merge: %v\n%s", err, out)
	}
	return policy, nil
}

// loops runs scaleLoops loops in containers with annotations, and
// returns the median time of a call and, under a policy, the
// supervisor's median time to decide one.
func (b *bench) loops(annotations map[string]string) (float64, session, error) {
	var times, deciding []float64
	for range scaleLoops {
		ns, id, err := b.loop(annotations)
		if err != nil {
			return 0, session{}, err
		}
		times = append(times, ns)
		if annotations != nil {
			s, err := b.session(id)
			if err != nil {
				return 0, session{}, err
			}
			deciding = append(deciding, float64(s.median))
		}
	}
	return median(times), session{median: time.Duration(median(deciding))}, nil
}

// loop runs cellprobe loop in a container with annotations, and returns
// the nanoseconds a call took, and the container.
func (b *bench) loop(annotations map[string]string) (float64, string, error) {
	bundle, id, err := b.bundle(hostbundle.Options{Args: []string{"/opt/cellprobe/cellprobe", "loop", strconv.Itoa(scaleCalls)}, Files: b.probeFiles(), Annotations: annotations})
	if err != nil {
		return 0, id, err
	}
	defer os.RemoveAll(bundle)
	out, err := b.shim("run", "--bundle", bundle, id).Output()
	if err != nil {
		return 0, id, fmt.Errorf("cellprobe loop: %w\n%s", err, out)
	}
	m := regexp.MustCompile(`ns-per-call: (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0, id, fmt.Errorf("cellprobe loop said %q", out)
	}
	ns, err := strconv.ParseFloat(string(m[1]), 64)
	return ns, id, err
}

// startIdle starts a container whose program waits, supervised.
func (b *bench) startIdle(policy string) (*idle, error) {
	bundle, id, err := b.bundle(hostbundle.Options{Args: []string{"/opt/cellprobe/cellprobe", "wait", "/tmp"}, Files: b.probeFiles(), Annotations: map[string]string{"syscell.policy": policy}})
	if err != nil {
		return nil, err
	}
	cmd := b.shim("run", "--bundle", bundle, id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("an idle container said %q: %v", ready, err)
	}
	return &idle{cmd: cmd, stdin: stdin}, nil
}

// stop ends the idle container: its program reads the end of its input
// and exits.
func (c *idle) stop() {
	c.stdin.Close()
	c.cmd.Wait()
}
