package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
)

// StartResult is how long a container of /usr/bin/true takes from run to
// its exit, in milliseconds, by round: runc alone, syscell's runtime
// with no annotation (runc's command, executed in its place), and under
// a per-library policy (a registration, the bundle's additions, the
// program's check, its connection and compiled filter).
type StartResult struct {
	Runc        []float64 `json:"runc_ms"`
	PassThrough []float64 `json:"pass_through_ms"`
	Cell        []float64 `json:"cell_ms"`
	// AddedPassThrough and AddedCell are the medians' differences to
	// runc's median, in milliseconds.
	AddedPassThrough float64 `json:"added_pass_through_ms"`
	AddedCell        float64 `json:"added_cell_ms"`
}

// startRounds is how many times each way is timed per round.
const startRounds = 4

// start times containers of /usr/bin/true, the three ways taking turns.
func (b *bench) start(ctx context.Context) (*StartResult, error) {
	const policy = "bench-true"
	progress("start: recording /usr/bin/true in a container")
	bundle, id, err := b.bundle(hostbundle.Options{Args: []string{"/usr/bin/true"}, Annotations: map[string]string{"syscell.record": policy}})
	if err != nil {
		return nil, err
	}
	if out, err := b.shim("run", "--bundle", bundle, id).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("record: %v\n%s", err, out)
	}
	if err := b.waitRecording(policy, id); err != nil {
		return nil, err
	}
	res := &StartResult{}
	ways := []struct {
		times       *[]float64
		annotations map[string]string
		runc        bool
	}{{&res.Runc, nil, true}, {&res.PassThrough, nil, false}, {&res.Cell, map[string]string{"syscell.policy": policy}, false}}
	for r := range b.rounds * startRounds {
		for i := range ways {
			w := ways[(i+r)%len(ways)]
			bundle, id, err := b.bundle(hostbundle.Options{Args: []string{"/usr/bin/true"}, Annotations: w.annotations})
			if err != nil {
				return nil, err
			}
			cmd := b.shim("run", "--bundle", bundle, id)
			if w.runc {
				cmd = exec.Command(b.runc, "--root", b.state, "run", "--bundle", bundle, id)
			}
			cmd.Stdout, cmd.Stderr = discard, discard
			began := time.Now()
			err = cmd.Run()
			took := time.Since(began)
			os.RemoveAll(bundle)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cmd.Args, err)
			}
			*w.times = append(*w.times, float64(took.Microseconds())/1000)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	runc := median(append([]float64(nil), res.Runc...))
	res.AddedPassThrough = median(append([]float64(nil), res.PassThrough...)) - runc
	res.AddedCell = median(append([]float64(nil), res.Cell...)) - runc
	progress("start: runc %.1f ms; added: pass-through %.1f ms, per library %.1f ms", runc, res.AddedPassThrough, res.AddedCell)
	return res, nil
}
