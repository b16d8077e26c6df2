package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// compatCase is one program of the compatibility suite: a file of
// testdata/compat (README.md there says how one is written).
type compatCase struct {
	name, about string
	// record is the command recorded, other another ordinary input and
	// error an error path, each a program and its arguments.
	record, other, error []string
	// env is added to the suite's environment.
	env []string
	// needs are programs that must be installed, services the servers
	// the commands talk to.
	needs, services []string
	// noInfer, where set, says why the recording is not checked against
	// the static inference.
	noInfer string
	files   []txtar.File
}

// fixedTime is every extracted file's time, so that what a program says
// of times (ls -l, gzip's header) is the same in every run.
var fixedTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func loadCompatCases(t *testing.T, dir string) []*compatCase {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases in %s: %v", dir, err)
	}
	var cases []*compatCase
	for _, path := range paths {
		c, err := parseCompatCase(path)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

// parseCompatCase reads a case: its comment holds "key: value" lines
// (about, record, other, error, env, needs, services), the rest is the
// files the commands run among.
func parseCompatCase(path string) (*compatCase, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &compatCase{name: strings.TrimSuffix(filepath.Base(path), ".txtar"), files: ar.Files}
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key: value", path, i+1)
		}
		value = strings.TrimSpace(value)
		var words []string
		if key != "about" && key != "infer" {
			if words, err = splitWords(value); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
		}
		switch key {
		case "about":
			c.about = value
		case "infer":
			c.noInfer = strings.TrimPrefix(value, "no: ")
		case "record":
			c.record = words
		case "other":
			c.other = words
		case "error":
			c.error = words
		case "env":
			c.env = append(c.env, words...)
		case "needs":
			c.needs = append(c.needs, words...)
		case "services":
			c.services = append(c.services, words...)
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, i+1, key)
		}
	}
	if len(c.record) == 0 || len(c.other) == 0 || len(c.error) == 0 {
		return nil, fmt.Errorf("%s: a case needs record, other and error commands", path)
	}
	return c, nil
}

// splitWords splits a command line into words as a shell would,
// quotes aside: no expansion, no escapes.
func splitWords(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(s[i+1:], ch)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c", ch)
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// extract makes work a fresh copy of the case's files, all of the same
// time; files under bin/ and named *.sh are executable.
func (c *compatCase) extract(t *testing.T, work string) {
	t.Helper()
	if err := os.RemoveAll(work); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, f := range c.files {
		path := filepath.Join(work, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		perm := os.FileMode(0o644)
		if strings.HasPrefix(f.Name, "bin/") || strings.HasSuffix(f.Name, ".sh") {
			perm = 0o755
		}
		if err := os.WriteFile(path, f.Data, perm); err != nil {
			t.Fatal(err)
		}
		for d := filepath.Dir(path); d != work && !slices.Contains(dirs, d); d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
		if err := os.Chtimes(path, fixedTime, fixedTime); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range append(dirs, work) {
		if err := os.Chtimes(d, fixedTime, fixedTime); err != nil {
			t.Fatal(err)
		}
	}
}

// environ is the environment every command of c runs with: the same in
// every run, whatever the test's own.
func (c *compatCase) environ(work string) []string {
	env := []string{
		"PATH=" + filepath.Join(work, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + work, "LANG=C.UTF-8", "TZ=UTC", "TERM=dumb", "USER=root", "LOGNAME=root",
	}
	return append(env, c.env...)
}

// services are the servers the suite's commands talk to, by name, with
// the port each listens on.
type services map[string]int

// expand replaces $NAME_PORT in args with the port of service name.
func (s services) expand(args []string) []string {
	out := slices.Clone(args)
	for name, port := range s {
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], "$"+strings.ToUpper(name)+"_PORT", strconv.Itoa(port))
		}
	}
	return out
}

// startServices starts, unfiltered, the servers the cases name: an
// HTTP server of testdata/compat/www (http) and redis-server (redis).
func startServices(t *testing.T, cases []*compatCase) services {
	svc := services{}
	for _, c := range cases {
		for _, name := range c.services {
			if _, ok := svc[name]; ok {
				continue
			}
			port := freePort(t)
			var cmd *exec.Cmd
			switch name {
			case "http":
				www, err := filepath.Abs("testdata/compat/www")
				if err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(need(t, "python3", "python3"), "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", www)
			case "redis":
				cmd = exec.Command(need(t, "redis-server", "redis-server"), "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
			default:
				t.Fatalf("%s: unknown service %q", c.name, name)
			}
			if err := cmd.Start(); err != nil {
				t.Fatalf("start %s: %v", name, err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			waitListening(t, name, port)
			svc[name] = port
		}
	}
	return svc
}

// freePort finds a TCP port on the loopback that nothing listens on.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until a server accepts connections on port.
func waitListening(t *testing.T, name string, port int) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s does not listen on port %d", name, port)
}

// compatTable is docs/COMPATIBILITY.md's table of the runs.
func compatTable(rows []compatRow) []byte {
	var b strings.Builder
	b.WriteString(compatHeader)
	b.WriteString("| program | what | recorded input, per-library | recorded input, whole-process | other input, merged policy, per-library | other input, merged policy, whole-process | other input, first policy | error path, merged policy | error path, first policy | other input, first policy --widen static | error path, first policy --widen static:exit | recorded calls not inferred |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.about,
			r.recorded, r.recordedWhole, r.otherMerged, r.otherMergedWhole, r.otherFirst, r.errorMerged, r.errorFirst,
			r.otherWidened, r.errorWidened, r.notInferred)
	}
	return []byte(b.String())
}

const compatHeader = `# Compatibility with ordinary programs

Written by ` + "`go test ./integration -run TestCompatibility -compat.doc ../docs/COMPATIBILITY.md`" + `
(as root; CI runs the same test without writing this file). Each program
of ` + "`integration/testdata/compat`" + ` is recorded with ` + "`syscell record`" + ` on one input
(*recorded input*), and on another ordinary input with ` + "`--merge`" + ` of the
first recording (*merged policy*), then run under those policies with
` + "`syscell run`" + `, per library and ` + "`--whole-process`" + `, and compared with its
unfiltered run: exit status, standard output and standard error.

- **same**: exactly as unfiltered.
- **same, denial reported**: exactly as unfiltered, and syscell said at
  exit that it denied calls (the program coped).
- **differs, denial reported**: the policy lacked calls this input needs;
  the program failed as it does when a call fails, and syscell said at exit
  how many calls it denied and which was first.
- A silent difference, or a crash the unfiltered program does not have,
  fails the test.

The recorded input and the other input under the merged policy must be
**same** in every mode; the inputs the policy was not recorded on (the
other input under the first policy alone, and an error path) show what a
recording misses, and that every such denial is said. Widened with what
` + "`syscell infer`" + ` finds the program's objects can do (` + "`run --widen static`" + `,
every inferred call; ` + "`--widen static:exit`" + `, those of the paths that end
the program), the first policy must run the other input and the error
path **same** as unfiltered; and every call the first recording saw must
lie in the inferred calls of its compartment (` + "`infer --check`" + `: the last
column counts those that do not, which must be 0).

`
