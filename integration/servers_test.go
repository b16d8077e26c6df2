package integration

import (
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
)

// servers are the programs of bench/servers, whose recorded policies are
// docs/servers/SERVER.toml.
var servers = []string{"redis", "nginx", "postgres", "fio"}

// serversTimeout bounds the whole quick run: four servers, three modes
// and an audit run each, with loads of two seconds.
const serversTimeout = 15 * time.Minute

// TestServersUnderRecordedPolicies runs Debian's redis-server, nginx,
// postgres and fio under the per-library policies recorded for them
// (three merged runs each), with short loads, through
// bench/servers/throughput.sh --quick: every server must serve its load
// to completion plainly, under the whole-process filter and under its
// compartments, with no call denied, neither by the supervisor in the
// per-library run nor by anyone in an audit-mode run.
func TestServersUnderRecordedPolicies(t *testing.T) {
	requireRoot(t)
	bash := need(t, "bash", "bash")
	gcc := need(t, "gcc", "gcc")
	for _, server := range servers {
		checkRecordedFor(t, filepath.Join("../docs/servers", server+".toml"))
	}
	dir := t.TempDir()
	syscell := buildSyscell(t, dir, gcc)
	serveQuickly(t, bash, syscell, "../docs/servers", filepath.Join(dir, "out"))
}

// TestServersRecordedByPhase records each server once by phase under its
// load (bench/servers/record.sh, RUNS=1), and runs them under these
// policies as TestServersUnderRecordedPolicies does: a policy recorded by
// phase must serve its load with no call denied, in its serving phase
// included.
func TestServersRecordedByPhase(t *testing.T) {
	requireRoot(t)
	bash := need(t, "bash", "bash")
	gcc := need(t, "gcc", "gcc")
	dir := t.TempDir()
	syscell := buildSyscell(t, dir, gcc)
	policies := filepath.Join(dir, "policies")
	cmd := exec.Command(bash, "../bench/servers/record.sh", "all", policies)
	cmd.Env = append(cmd.Environ(), "SYSCELL="+syscell, "RUNS=1")
	execute(t, serversTimeout, cmd)
	for _, server := range servers {
		p, _, err := policy.Load(filepath.Join(policies, server+".toml"), policy.OCIOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Phased() || !slices.ContainsFunc(p.Compartments, func(c policy.Compartment) bool { return len(c.Serving) < len(c.Syscalls) }) {
			t.Errorf("%s: recorded with no phases, or with no compartment narrowed while serving", server)
		}
	}
	serveQuickly(t, bash, syscell, policies, filepath.Join(dir, "out"))
}

// buildSyscell builds syscell and its audit library into dir.
func buildSyscell(t *testing.T, dir, gcc string) string {
	t.Helper()
	syscell := filepath.Join(dir, "syscell")
	goTool := need(t, "go", "Go")
	execute(t, buildTimeout, exec.Command(goTool, "build", "-o", syscell, "github.com/syscell/syscell/cmd/syscell"))
	if diag, err := cell.BuildLibrary("../audit", cell.LibraryPath(syscell), gcc); err != nil {
		t.Fatalf("build the audit library: %v\n%s", err, diag)
	}
	return syscell
}

// serveQuickly runs bench/servers/throughput.sh --quick on the policies
// of directory policies, which fails on any denied call, and checks that
// every server has its row of figures.
func serveQuickly(t *testing.T, bash, syscell, policies, out string) {
	t.Helper()
	cmd := exec.Command(bash, "../bench/servers/throughput.sh", "--quick", "all", out)
	cmd.Env = append(cmd.Environ(), "SYSCELL="+syscell, "POLICIES="+policies)
	text := string(execute(t, serversTimeout, cmd))
	t.Logf("bench/servers/throughput.sh --quick all (%s):\n%s", policies, text)
	for _, server := range servers {
		row := regexp.MustCompile(`(?m)^\| ` + server + ` \|.*\| [0-9.]+ \|`)
		if !row.MatchString(text) {
			t.Errorf("%s: no row with its figures in the table", server)
		}
	}
}

// checkRecordedFor checks that the installed files are those the policy
// was recorded from: a compartment whose build-id no longer matches its
// file belongs to no object, and the server would be denied its calls.
func checkRecordedFor(t *testing.T, file string) {
	t.Helper()
	p, _, err := policy.Load(file, policy.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Compartments {
		if c.Path == "" || c.BuildID == "" {
			continue
		}
		id, err := attribute.FileBuildID(c.Path)
		if errors.Is(err, fs.ErrNotExist) && !inCI() {
			t.Skipf("SKIPPED: %s is not installed: %v; make deps installs the servers", c.Path, err)
		}
		if err != nil {
			t.Fatalf("%s: compartment %s: %v (scripts/install-deps.sh installs the servers)", file, c.Name, err)
		}
		if id != c.BuildID {
			t.Fatalf("%s: compartment %s was recorded from build %s, the installed file is build %s: record the servers again (bench/servers/record.sh all docs/servers)",
				file, c.Name, c.BuildID, id)
		}
	}
}
