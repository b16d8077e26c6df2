package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
	"github.com/syscell/syscell/internal/hostservers"
)

// ThroughputResult is a server's throughput in a container, without
// syscell and under its per-library policy.
type ThroughputResult struct {
	Server string `json:"server"`
	// Plain and Cell are the throughput of each round (operations per
	// second), in round order; Ratios each round's Cell over Plain.
	Plain  []float64 `json:"plain"`
	Cell   []float64 `json:"cell"`
	Ratios []float64 `json:"ratios"`
	// MedianRatio is the median of Ratios; Supervised the calls the
	// supervisor decided in each per-library round, and Denied those it
	// denied in all of them.
	MedianRatio float64 `json:"median_ratio"`
	Supervised  []int   `json:"supervised"`
	Denied      int     `json:"denied"`
}

// throughput records srv in a container under its full load, then
// serves the load in rounds, plain and per library, taking turns in
// which goes first.
func (b *bench) throughput(ctx context.Context, srv hostservers.Server) (ThroughputResult, error) {
	res := ThroughputResult{Server: srv.Name}
	policy := "bench-" + srv.Name
	progress("%s: recording in a container", srv.Name)
	_, id, err := b.serve(ctx, srv, map[string]string{"syscell.record": policy})
	if err != nil {
		return res, err
	}
	if err := b.waitRecording(policy, id); err != nil {
		return res, err
	}
	cell := map[string]string{"syscell.policy": policy}
	for r := range b.rounds {
		order := []map[string]string{nil, cell}
		if r%2 == 1 {
			order = []map[string]string{cell, nil}
		}
		var plain, per float64
		for _, annotations := range order {
			f, id, err := b.serve(ctx, srv, annotations)
			if err != nil {
				return res, err
			}
			if annotations == nil {
				plain = f.Throughput
				continue
			}
			per = f.Throughput
			s, err := b.session(id)
			if err != nil {
				return res, err
			}
			res.Supervised = append(res.Supervised, s.decided)
			res.Denied += s.denied
		}
		progress("%s: round %d: plain %.0f/s, per library %.0f/s (%.3f)", srv.Name, r+1, plain, per, per/plain)
		res.Plain, res.Cell, res.Ratios = append(res.Plain, plain), append(res.Cell, per), append(res.Ratios, per/plain)
	}
	res.MedianRatio = median(append([]float64(nil), res.Ratios...))
	return res, nil
}

// serve runs srv in a container with annotations, loads it, stops it
// with SIGTERM, and returns what the load measured and the container.
func (b *bench) serve(ctx context.Context, srv hostservers.Server, annotations map[string]string) (hostservers.Figures, string, error) {
	tmp, err := os.MkdirTemp(b.dir, "tmp-")
	if err != nil {
		return hostservers.Figures{}, "", err
	}
	defer os.RemoveAll(tmp)
	port, err := hostservers.FreePort()
	if err != nil {
		return hostservers.Figures{}, "", err
	}
	args, err := srv.Command(tmp, port)
	if err != nil {
		return hostservers.Figures{}, "", err
	}
	bundle, id, err := b.bundle(hostbundle.Options{Args: args, Tmp: tmp, Annotations: annotations, HostNet: true, HostEtc: true})
	if err != nil {
		return hostservers.Figures{}, "", err
	}
	defer os.RemoveAll(bundle)
	logFile, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return hostservers.Figures{}, "", err
	}
	defer logFile.Close()
	cmd := b.shim("run", "--bundle", bundle, id)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return hostservers.Figures{}, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); !srv.Ready(port); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			return hostservers.Figures{}, id, fmt.Errorf("%s exited before it served: %v\n%s", srv.Name, err, log)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return hostservers.Figures{}, id, fmt.Errorf("%s does not answer on port %d", srv.Name, port)
		}
	}
	f, err := srv.Load(ctx, port, b.quick)
	cmd.Process.Signal(syscall.SIGTERM)
	if werr := <-exited; err == nil && werr != nil {
		log, _ := os.ReadFile(logFile.Name())
		err = fmt.Errorf("%s did not stop cleanly: %v\n%s", srv.Name, werr, log)
	}
	return f, id, err
}
