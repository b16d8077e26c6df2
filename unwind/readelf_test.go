package unwind_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/syscell/syscell/unwind"
)

// TestReadelfAgrees interprets the CFI of real objects (this machine's libc
// and dynamic loader, and the vDSO) and checks every row of every FDE
// against GNU readelf's interpretation, an independent implementation:
// read at once (Load) and an entry at a time (Open).
func TestReadelfAgrees(t *testing.T) {
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skipf("SKIPPED: readelf (binutils) is the oracle and is missing: %v", err)
	}
	objects := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", vdsoFile(t)}
	loaders := []struct {
		name string
		load func(*elf.File) (*unwind.Table, error)
	}{{"Load", unwind.Load}, {"Open", unwind.Open}}
	for _, path := range objects {
		want := readelfRows(t, path)
		for _, l := range loaders {
			t.Run(filepath.Base(path)+"/"+l.name, func(t *testing.T) {
				table := openFile(t, path, l.load)
				if table.Len() != len(want) {
					t.Errorf("%d FDEs, readelf lists %d", table.Len(), len(want))
				}
				compareRows(t, table, want)
			})
		}
	}
}

func compareRows(t *testing.T, table *unwind.Table, want []readelfFDE) {
	checked := 0
	for _, fde := range want {
		got, err := table.Find(fde.start)
		if err != nil {
			t.Errorf("FDE at %#x: %v", fde.start, err)
			continue
		}
		if got.Start != fde.start || got.End != fde.end {
			t.Errorf("FDE [%#x, %#x), readelf says [%#x, %#x)", got.Start, got.End, fde.start, fde.end)
		}
		for _, row := range fde.rows {
			r, err := table.Row(row.loc)
			if err != nil {
				t.Errorf("row at %#x: %v", row.loc, err)
				continue
			}
			if g := readelfForm(&r, fde.columns); g != row.text {
				t.Errorf("row at %#x: %q, readelf says %q", row.loc, g, row.text)
			}
			checked++
		}
	}
	t.Logf("%d FDEs, %d rows agree", len(want), checked)
}

func loadFile(t *testing.T, path string) *unwind.Table {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := unwind.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// openFile reads the CFI of path with load, the file open until the test
// ends.
func openFile(t *testing.T, path string, load func(*elf.File) (*unwind.Table, error)) *unwind.Table {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	table, err := load(f)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// readelfForm writes a row as readelf does, in its columns: a rule the CFI
// does not give, or gives as undefined, is "u".
func readelfForm(r *unwind.Row, columns []string) string {
	fields := []string{r.CFA.String()}
	byName := map[string]unwind.Rule{}
	for reg, rule := range r.Regs {
		byName[unwind.Reg(reg).String()] = rule
	}
	for _, col := range columns {
		rule := byName[col]
		s := rule.String()
		switch rule.Kind {
		case unwind.RuleUnspecified:
			s = "u"
		case unwind.RuleRegister:
			s = fmt.Sprintf("r%d (%s)", rule.Reg, rule.Reg)
		}
		fields = append(fields, s)
	}
	return strings.Join(fields, " ")
}

type readelfFDE struct {
	start, end uint64
	columns    []string
	rows       []readelfRow
}

type readelfRow struct {
	loc  uint64
	text string
}

var (
	cieLine = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ CIE `)
	fdeLine = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)$`)
	rowLine = regexp.MustCompile(`^([0-9a-f]{16}) (.*)$`)
)

// readelfRows runs readelf --debug-dump=frames-interp on path.
func readelfRows(t *testing.T, path string) []readelfFDE {
	t.Helper()
	out, err := exec.Command("readelf", "--wide", "--debug-dump=frames-interp", "--debug-dump=no-follow-links", path).Output()
	if err != nil {
		t.Fatalf("readelf %s: %v", path, err)
	}
	var fdes []readelfFDE
	// inFDE is false in a CIE's rows, which describe no code.
	inFDE := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " ")
		if m := fdeLine.FindStringSubmatch(line); m != nil {
			fdes = append(fdes, readelfFDE{start: parseHex(t, m[1]), end: parseHex(t, m[2])})
			inFDE = true
			continue
		}
		if cieLine.MatchString(line) {
			inFDE = false
		}
		if !inFDE {
			continue
		}
		cur := &fdes[len(fdes)-1]
		trimmed := strings.Fields(line)
		if len(trimmed) > 1 && trimmed[0] == "LOC" && trimmed[1] == "CFA" {
			cur.columns = trimmed[2:]
		} else if m := rowLine.FindStringSubmatch(line); m != nil {
			cur.rows = append(cur.rows, readelfRow{loc: parseHex(t, m[1]), text: strings.Join(strings.Fields(m[2]), " ")})
		}
	}
	return fdes
}

func parseHex(t *testing.T, s string) uint64 {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// vdsoFile writes this process's vDSO to a file readelf can read.
func vdsoFile(t *testing.T) string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var start, end uint64
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, "[vdso]") {
			fmt.Sscanf(line, "%x-%x", &start, &end)
		}
	}
	if start == 0 {
		t.Skip("SKIPPED: this process has no vDSO")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	image := make([]byte, end-start)
	if _, err := mem.ReadAt(image, int64(start)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(path, image, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
