package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// workload is a program and its input.
type workload struct {
	name string
	// samples is how many times each way runs it per round: more for
	// a run too short to time once.
	samples int
	// command writes the workload's input into dir and returns the
	// command to run, whose standard output is discarded.
	command func(dir string) ([]string, error)
}

// The measures and their workloads.
var workloads = map[string][]workload{
	"exec":  {{name: "exec-200", samples: 1, command: execLoop}},
	"start": {{name: "true", samples: 10, command: func(string) ([]string, error) { return []string{"/bin/true"}, nil }}},
	"tools": {
		{name: "sed", samples: 1, command: withLines("sed", "s/1/x/g")},
		{name: "openssl", samples: 1, command: withBlob("openssl", "dgst", "-sha256")},
		{name: "gzip", samples: 1, command: withBlob("gzip", "-c")},
		{name: "sort", samples: 1, command: withLines("sort")},
	},
}

// Input sizes, as issue 13 states its targets.
const (
	lineCount = 200_000
	blobSize  = 20 << 20
	execCount = 200
)

// execLoop is a shell script that runs /bin/true execCount times.
func execLoop(dir string) ([]string, error) {
	path := filepath.Join(dir, "exec-loop.sh")
	script := fmt.Sprintf("#!/bin/sh\ni=0\nwhile [ $i -lt %d ]; do /bin/true; i=$((i+1)); done\n", execCount)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// withLines runs args on a file of lineCount lines, in no order.
func withLines(args ...string) func(string) ([]string, error) {
	return func(dir string) ([]string, error) {
		path := filepath.Join(dir, "lines.txt")
		if err := writeText(path, lineCount, 0); err != nil {
			return nil, err
		}
		return append(args, path), nil
	}
}

// withBlob runs args on blobSize bytes of text.
func withBlob(args ...string) func(string) ([]string, error) {
	return func(dir string) ([]string, error) {
		path := filepath.Join(dir, "blob.txt")
		if err := writeText(path, 0, blobSize); err != nil {
			return nil, err
		}
		return append(args, path), nil
	}
}

// writeText writes lines of text, the same at every invocation, to path:
// lines of them, or as many as make size bytes.
func writeText(path string, lines, size int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, 2))
	for n, written := 0, 0; (lines > 0 && n < lines) || (size > 0 && written < size); n++ {
		k, _ := fmt.Fprintf(w, "%d %08x the quick brown fox jumps over %d lazy dogs\n", r.IntN(1_000_000), r.Uint32(), n)
		written += k
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
