package cell_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// TestStubsMatchLibc runs wrappers, which calls through libwrap.so every
// wrapper that has a stub, once plainly and once with every call depending
// on the caller (so that every binding of libwrap.so gets a stub), both
// under strace: the stubs must make the very calls glibc's wrappers make.
// No call of libwrap.so's may reach the supervisor: each came from its
// slot. (The runtime's and the loader's own calls may.)
func TestStubsMatchLibc(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skipf("SKIPPED: strace is missing (scripts/install-deps.sh installs it): %v", err)
	}
	dir := fixtures(t)
	prog := filepath.Join(dir, wrappersName)
	scratch := t.TempDir()
	plain := filepath.Join(t.TempDir(), "plain")
	cmd := exec.Command(strace, "-o", plain, prog, scratch)
	cmd.Stdin = strings.NewReader("x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	for _, name := range []string{"f", "t", "c", "s", "s2", "h2"} {
		os.Remove(filepath.Join(scratch, name))
	}
	stubbed, res := straceCell(t, strace, prog, scratch)
	want, got := calls(t, plain), calls(t, stubbed)
	if len(want) < 100 {
		t.Fatalf("only %d calls traced without stubs", len(want))
	}
	for i := range max(len(want), len(got)) {
		w, g := at(want, i), at(got, i)
		if w != g {
			t.Errorf("call %d: with stubs %q, glibc's wrapper %q", i, g, w)
		}
	}
	for _, c := range res.Supervised {
		if c.Owner != cell.OwnerRuntime && c.Owner != cell.OwnerStartUp {
			t.Errorf("supervised: %+v", c)
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

// straceCell runs prog with its compartments, and strace attached once
// the program has told its pid.
func straceCell(t *testing.T, strace, prog, scratch string) (string, *cell.Result) {
	t.Helper()
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	defer stdoutR.Close()
	type done struct {
		res *cell.Result
		err error
	}
	finished := make(chan done, 1)
	go func() {
		defer stdinR.Close()
		defer stdout.Close()
		cmd := enforce.Command{Path: prog, Args: []string{prog, scratch}, Stdin: stdinR, Stdout: stdout, Stderr: os.Stderr}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cell.Run(ctx, loadPolicy(t, "wrappers.toml"), cmd, cell.Options{Library: filepath.Join(fixtures(t), auditLib)})
		finished <- done{res, err}
	}()
	pid, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the program's pid: %v (%v)", err, <-finished)
	}
	out := filepath.Join(t.TempDir(), "stubbed")
	tracer := exec.Command(strace, "-o", out, "-p", strings.TrimSpace(pid))
	stderr, err := tracer.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tracer.Start(); err != nil {
		t.Fatal(err)
	}
	// strace says when it is attached, or why it cannot be.
	said := bufio.NewScanner(stderr)
	var lines []string
	for said.Scan() && !strings.Contains(said.Text(), "attached") {
		lines = append(lines, said.Text())
	}
	if said.Err() != nil || !strings.Contains(said.Text(), "attached") {
		stdin.Close()
		<-finished
		tracer.Wait()
		if msg := strings.Join(lines, "\n"); strings.Contains(msg, "Operation not permitted") {
			t.Skipf("SKIPPED: strace may not attach to the program here (Yama's ptrace_scope?): %s", msg)
		}
		t.Fatalf("strace did not attach: %s", strings.Join(lines, "\n"))
	}
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stderr)
		close(drained)
	}()
	stdin.Write([]byte("x"))
	d := <-finished
	<-drained
	tracer.Wait()
	if d.err != nil {
		t.Fatal(d.err)
	}
	return out, d.res
}

var (
	result  = regexp.MustCompile(`\)\s+= .*$`)
	numbers = regexp.MustCompile(`0x[0-9a-f]+|@"[0-9a-f]+"|[0-9]+`)
)

// calls are the calls a strace output shows between the program's begin
// and end marks, without their results, and with numbers (descriptors,
// addresses, ids, times, the names the kernel gives unbound sockets)
// blotted out: the names, the order, the flags and the paths of the
// arguments remain.
func calls(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, `write(1, "begin`):
			in = true
			continue
		case strings.HasPrefix(line, `write(1, "end`):
			in = false
		}
		// A child's SIGCHLD comes when it exits, before or after its
		// parent's wait starts: no call of the parent's.
		if in && !strings.HasPrefix(line, "--- SIGCHLD") {
			out = append(out, numbers.ReplaceAllString(result.ReplaceAllString(line, ")"), "N"))
		}
	}
	return out
}
