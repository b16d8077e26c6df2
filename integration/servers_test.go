package integration

import (
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/cell"
	"github.com/syscell/syscell/policy"
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
	syscell := filepath.Join(dir, "syscell")
	goTool := need(t, "go", "Go")
	execute(t, buildTimeout, exec.Command(goTool, "build", "-o", syscell, "github.com/syscell/syscell/cmd/syscell"))
	if diag, err := cell.BuildLibrary("../audit", cell.LibraryPath(syscell), gcc); err != nil {
		t.Fatalf("build the audit library: %v\n%s", err, diag)
	}
	cmd := exec.Command(bash, "../bench/servers/throughput.sh", "--quick", "all", filepath.Join(dir, "out"))
	cmd.Env = append(cmd.Environ(), "SYSCELL="+syscell)
	out := string(execute(t, serversTimeout, cmd))
	t.Logf("bench/servers/throughput.sh --quick all:\n%s", out)
	for _, server := range servers {
		row := regexp.MustCompile(`(?m)^\| ` + server + ` \|.*\| [0-9.]+ \|`)
		if !row.MatchString(out) {
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
