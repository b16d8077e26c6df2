package integration

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/run/cell"
)

// compatDoc, when set, is where TestCompatibility writes its table:
//
//	go test ./integration -run TestCompatibility -compat.doc ../docs/COMPATIBILITY.md
var compatDoc = flag.String("compat.doc", "", "write the compatibility table to `FILE`")

// compatTimeout bounds one run of one program.
const compatTimeout = 2 * time.Minute

// TestCompatibility records ordinary Debian programs on one input and
// runs them under the recorded policy, per library and as one
// whole-process filter (testdata/compat, README.md there): on the
// recorded input, and on another ordinary input with the policy of both
// runs merged, each must behave exactly as it does unfiltered (exit
// status, standard output, standard error). On inputs the policy was not
// recorded on (the other input with the first policy alone, an error
// path), a program may behave otherwise only where syscell reports the
// calls it denied, and never crash where it would not have unfiltered.
func TestCompatibility(t *testing.T) {
	requireRoot(t)
	cases := loadCompatCases(t, "testdata/compat")
	tl := newCompatTools(t)
	svc := startServices(t, cases)
	var rows []compatRow
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, prog := range c.needs {
				need(t, prog, prog)
			}
			row := tl.check(t, c, svc)
			rows = append(rows, row)
		})
	}
	if *compatDoc != "" {
		if err := os.WriteFile(*compatDoc, compatTable(rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compatTools are syscell, built for the test with its audit library,
// the test's scratch space and the inference's cache.
type compatTools struct {
	syscell string
	dir     string
	cache   string
}

func newCompatTools(t *testing.T) *compatTools {
	dir := t.TempDir()
	syscell := filepath.Join(dir, "syscell")
	gcc := need(t, "gcc", "gcc")
	goTool := need(t, "go", "Go")
	execute(t, buildTimeout, exec.Command(goTool, "build", "-o", syscell, "github.com/syscell/syscell/cmd/syscell"))
	if diag, err := cell.BuildLibrary("../audit", cell.LibraryPath(syscell), gcc); err != nil {
		t.Fatalf("build the audit library: %v\n%s", err, diag)
	}
	return &compatTools{syscell: syscell, dir: dir, cache: filepath.Join(dir, "infer-cache")}
}

// outcome is how one run of a program ended and what it said.
type outcome struct {
	status         string
	stdout, stderr []byte
	// said is what syscell said on the standard error it shares with
	// the program, and denied whether that reports denied calls.
	said   []string
	denied bool
	// signal is the signal that killed the program, if one did.
	signal syscall.Signal
}

// same says whether o behaves as the unfiltered run u did.
func (o outcome) same(u outcome) bool {
	return o.status == u.status && bytes.Equal(o.stdout, u.stdout) && bytes.Equal(o.stderr, u.stderr)
}

// verdict names how a run under a policy compares with the unfiltered
// run: "same", "same, N denied" (identical, but syscell reported calls
// it denied), "denied, reported" (different, with the denials
// reported), or a failure: a silent difference, or a crash the
// unfiltered program did not have.
func verdict(o, u outcome) (string, bool) {
	switch {
	case o.signal != 0 && o.signal != u.signal:
		return "CRASH (" + o.status + ")", false
	case o.same(u) && !o.denied:
		return "same", true
	case o.same(u):
		return "same, denial reported", true
	case o.denied:
		return "differs, denial reported", true
	}
	return "DIFFERS SILENTLY", false
}

// compatRow is one program's line of the table.
type compatRow struct {
	name, about                         string
	recorded, recordedWhole             string
	otherMerged, otherMergedWhole       string
	otherFirst, errorMerged, errorFirst string
	// otherWidened and errorWidened are the first policy widened with
	// the inferred calls (run --widen): all of them, and those of the
	// paths that end the program.
	otherWidened, errorWidened string
	// notInferred counts the recorded calls the static inference of
	// the program does not bound, or says why they were not counted.
	notInferred string
}

// checkInferred checks that every call recorded in policy lies in the
// inferred calls of its compartment (syscell infer --check), and returns
// how many do not.
func (tl *compatTools) checkInferred(t *testing.T, c *compatCase, work, policy string, args []string) int {
	t.Helper()
	o := tl.run(t, c, work, append([]string{tl.syscell, "infer", "-q", "--cache", tl.cache, "--check", policy, "--"}, args...))
	if o.status == "exit status 0" {
		return 0
	}
	n := 0
	for _, line := range o.said {
		if _, err := fmt.Sscanf(line, "syscell: static bound of %d compartments: %d calls recorded but not inferred", new(int), &n); err == nil {
			break
		}
	}
	t.Errorf("calls recorded but not inferred (%s):\n%s\n%s", o.status, strings.Join(o.said, "\n"), o.stderr)
	return max(n, 1)
}

// check records c and runs it every way, failing t where a run does not
// behave as the rules of TestCompatibility say.
func (tl *compatTools) check(t *testing.T, c *compatCase, svc services) compatRow {
	work := filepath.Join(tl.dir, "work")
	first := filepath.Join(tl.dir, c.name+".toml")
	merged := filepath.Join(tl.dir, c.name+"-merged.toml")
	record, other, fail := svc.expand(c.record), svc.expand(c.other), svc.expand(c.error)
	tl.record(t, c, work, first, record)
	tl.record(t, c, work, merged, other, "--merge", first)
	row := compatRow{name: c.name, about: c.about}
	row.notInferred = "not checked: " + c.noInfer
	if c.noInfer == "" {
		row.notInferred = strconv.Itoa(tl.checkInferred(t, c, work, first, record))
	}

	base := map[string]outcome{}
	for what, args := range map[string][]string{"record": record, "other": other, "error": fail} {
		base[what] = tl.run(t, c, work, args)
	}
	for _, run := range []struct {
		cell   *string
		input  string
		policy string
		whole  bool
		exact  bool
		widen  string
	}{
		{&row.recorded, "record", first, false, true, ""},
		{&row.recordedWhole, "record", first, true, true, ""},
		{&row.otherMerged, "other", merged, false, true, ""},
		{&row.otherMergedWhole, "other", merged, true, true, ""},
		{&row.otherFirst, "other", first, false, false, ""},
		{&row.errorMerged, "error", merged, false, false, ""},
		{&row.errorFirst, "error", first, false, false, ""},
		{&row.otherWidened, "other", first, false, false, "static"},
		{&row.errorWidened, "error", first, false, false, "static:exit"},
	} {
		args := map[string][]string{"record": record, "other": other, "error": fail}[run.input]
		flags := []string{"run", "--policy", run.policy}
		if run.whole {
			flags = append(flags, "--whole-process")
		}
		if run.widen != "" && c.noInfer != "" {
			*run.cell = "not inferred"
			continue
		}
		if run.widen != "" {
			flags = append(flags, "--widen", run.widen, "--cache", tl.cache)
		}
		o := tl.run(t, c, work, append(append([]string{tl.syscell}, flags...), append([]string{"--"}, args...)...))
		v, ok := verdict(o, base[run.input])
		*run.cell = v
		if run.exact && v != "same" || !ok {
			t.Errorf("%s %s under %s: %s\n%s", strings.Join(flags, " "), strings.Join(args, " "), filepath.Base(run.policy), v, o.diff(base[run.input]))
		}
	}
	return row
}

// record records args in a fresh work directory into policy, with extra
// flags for record.
func (tl *compatTools) record(t *testing.T, c *compatCase, work, policy string, args []string, extra ...string) {
	t.Helper()
	flags := append([]string{"record", "-q", "-o", policy}, extra...)
	o := tl.run(t, c, work, append(append([]string{tl.syscell}, flags...), append([]string{"--"}, args...)...))
	if o.signal != 0 || !fileExists(policy) {
		t.Fatalf("syscell record %s: %s, no policy\n%s", strings.Join(args, " "), o.status, o.stderr)
	}
}

// run runs args in a fresh copy of the case's files, with the case's
// environment, and returns how it went.
func (tl *compatTools) run(t *testing.T, c *compatCase, work string, args []string) outcome {
	t.Helper()
	c.extract(t, work)
	ctx, cancel := context.WithTimeout(t.Context(), compatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = work, c.environ(work)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: did not end within %v", strings.Join(args, " "), compatTimeout)
	}
	o := outcome{stdout: stdout.Bytes(), status: cmd.ProcessState.String()}
	o.stderr, o.said = splitSaid(stderr.Bytes())
	o.denied = slices.ContainsFunc(o.said, isDenialSummary)
	o.status, o.signal = statusOf(cmd.ProcessState, o.said)
	return o
}

// splitSaid separates what syscell said ("syscell: ...") from what the
// program wrote to the standard error they share.
func splitSaid(stderr []byte) (program []byte, said []string) {
	var out bytes.Buffer
	for line := range strings.Lines(string(stderr)) {
		if strings.HasPrefix(line, "syscell: ") {
			said = append(said, strings.TrimSuffix(line, "\n"))
			continue
		}
		out.WriteString(line)
	}
	return out.Bytes(), said
}

// isDenialSummary matches the line syscell run writes at exit when the
// policy denied calls.
func isDenialSummary(line string) bool {
	return strings.Contains(line, " denied; first: ")
}

// statusOf is how a process ended. Under syscell, a program killed by a
// signal makes syscell exit with 128 plus its number and say so: that
// is the program's signal.
func statusOf(ps *os.ProcessState, said []string) (string, syscall.Signal) {
	ws := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "killed by " + ws.Signal().String(), ws.Signal()
	}
	code := ws.ExitStatus()
	for _, line := range said {
		if strings.Contains(line, " killed by ") && code > 128 {
			sig := syscall.Signal(code - 128)
			return "killed by " + sig.String(), sig
		}
	}
	return fmt.Sprintf("exit status %d", code), 0
}

// diff shows how o differs from the unfiltered u.
func (o outcome) diff(u outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %s (unfiltered: %s)\n", o.status, u.status)
	for _, s := range []struct {
		name     string
		got, was []byte
	}{{"stdout", o.stdout, u.stdout}, {"stderr", o.stderr, u.stderr}} {
		if !bytes.Equal(s.got, s.was) {
			fmt.Fprintf(&b, "%s:\n%s\nunfiltered %s:\n%s\n", s.name, clip(s.got), s.name, clip(s.was))
		}
	}
	fmt.Fprintf(&b, "syscell said:\n%s\n", strings.Join(o.said, "\n"))
	return b.String()
}

// clip shortens long output for a test log.
func clip(b []byte) string {
	const most = 2000
	if len(b) > most {
		return fmt.Sprintf("%s... (%d bytes)", b[:most], len(b))
	}
	return string(b)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
