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

	"github.com/syscell/syscell/internal/hostbundle"
)

// scaleCounts are the numbers of containers one supervisor serves.
var scaleCounts = []int{1, 8, 32}

// scaleCalls is how many supervised calls a measure makes.
const scaleCalls = 20000

// ScaleResult is the cost of a supervised call with N containers served.
type ScaleResult struct {
	Containers int `json:"containers"`
	// Supervised are the nanoseconds of a supervised getpid, by round;
	// Plain those of the same call in a container without syscell.
	Supervised []float64 `json:"supervised_ns"`
	Plain      []float64 `json:"plain_ns"`
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
		plain, err := b.loop(nil)
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
			ns, err := b.loop(map[string]string{"syscell.policy": policy})
			if err != nil {
				return nil, err
			}
			i := slices.Index(scaleCounts, n)
			results[i].Containers = n
			results[i].Supervised = append(results[i].Supervised, ns)
			results[i].Plain = append(results[i].Plain, plain)
			progress("scale: round %d: %d containers: %.0f ns a supervised call, %.0f ns plain", r+1, n, ns, plain)
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

// loop runs cellprobe loop in a container with annotations, and returns
// the nanoseconds a call took.
func (b *bench) loop(annotations map[string]string) (float64, error) {
	bundle, id, err := b.bundle(hostbundle.Options{Args: []string{"/opt/cellprobe/cellprobe", "loop", strconv.Itoa(scaleCalls)}, Files: b.probeFiles(), Annotations: annotations})
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(bundle)
	out, err := b.shim("run", "--bundle", bundle, id).Output()
	if err != nil {
		return 0, fmt.Errorf("cellprobe loop: %w\n%s", err, out)
	}
	m := regexp.MustCompile(`ns-per-call: (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("cellprobe loop said %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
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
