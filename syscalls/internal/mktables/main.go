// Command mktables writes the system call tables of package syscalls
// (tables.go) from golang.org/x/sys/unix and the kernel's uapi headers, so
// that no number is ever typed by hand.
//
// x86_64 and x86 come from the x/sys version pinned in go.mod, whose zsysnum
// files track the newest kernels. x/sys has no x32 table, so x32 comes from
// the headers of linux-libc-dev and is brought up to date by mergeX32.
//
// Usage, from the syscalls directory (go generate does this):
//
//	go run ./internal/mktables [-o tables.go]
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// x32Bit mirrors syscalls.X32Bit. Importing the package would make the
// generator depend on the file it writes.
const x32Bit = 0x40000000

// x32Legacy is where the kernel put x32's own variants of calls whose x86_64
// ABI does not fit (512-547); no syscall has been added there since.
const x32Legacy = 512

// The uapi headers of linux-libc-dev, installed under Debian's multiarch
// include directory.
const (
	headerX32 = "/usr/include/x86_64-linux-gnu/asm/unistd_x32.h"
	header64  = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
)

const xsysPath = "golang.org/x/sys"

// entry is a system call: its lowercase kernel name and its number as
// seccomp_data.nr carries it.
type entry struct {
	name string
	nr   uint32
}

// module is the part of `go list -m -json` the generator needs.
type module struct {
	Dir     string
	Version string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("mktables: ")
	out := flag.String("o", "tables.go", "file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	src, err := generate()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("write tables: %w", err)
	}
	return nil
}

func generate() ([]byte, error) {
	xsys, err := findModule(xsysPath)
	if err != nil {
		return nil, err
	}
	amd64, err := parseZsysnum(filepath.Join(xsys.Dir, "unix", "zsysnum_linux_amd64.go"))
	if err != nil {
		return nil, err
	}
	i386, err := parseZsysnum(filepath.Join(xsys.Dir, "unix", "zsysnum_linux_386.go"))
	if err != nil {
		return nil, err
	}
	x32, err := parseHeader(headerX32)
	if err != nil {
		return nil, err
	}
	old64, err := parseHeader(header64)
	if err != nil {
		return nil, err
	}
	x32, err = mergeX32(x32, old64, amd64)
	if err != nil {
		return nil, err
	}
	return render(xsys.Version, amd64, i386, x32)
}

// findModule asks the go command for the build's copy of a module, so that
// the tables follow the version go.mod pins rather than whatever is newest.
func findModule(path string) (module, error) {
	out, err := exec.Command("go", "list", "-m", "-json", path).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(exit.Stderr))
		}
		return module{}, fmt.Errorf("go list -m %s: %w", path, err)
	}
	var m module
	if err := json.Unmarshal(out, &m); err != nil {
		return module{}, fmt.Errorf("go list -m %s: %w", path, err)
	}
	if m.Dir == "" {
		return module{}, fmt.Errorf("%s %s is not in the module cache (run go mod download %[1]s)", path, m.Version)
	}
	return m, nil
}

// parseZsysnum reads the SYS_ constants of an x/sys zsysnum file. Parsing
// the Go source, rather than importing the package, reaches every
// architecture's file from any host.
func parseZsysnum(path string) ([]entry, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse x/sys table: %w", err)
	}
	var t []entry
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			es, err := constEntries(spec.(*ast.ValueSpec))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			t = append(t, es...)
		}
	}
	return checked(path, t)
}

// constEntries turns `SYS_NEWFSTATAT = 262` into {newfstatat 262}.
func constEntries(spec *ast.ValueSpec) ([]entry, error) {
	var es []entry
	for i, id := range spec.Names {
		name, ok := strings.CutPrefix(id.Name, "SYS_")
		if !ok {
			continue
		}
		if i >= len(spec.Values) {
			return nil, fmt.Errorf("%s has no value of its own", id.Name)
		}
		lit, ok := spec.Values[i].(*ast.BasicLit)
		if !ok || lit.Kind != token.INT {
			return nil, fmt.Errorf("%s is not an integer literal", id.Name)
		}
		nr, err := strconv.ParseUint(lit.Value, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id.Name, err)
		}
		es = append(es, entry{strings.ToLower(name), uint32(nr)})
	}
	return es, nil
}

var (
	defineNR = regexp.MustCompile(`^#define __NR_(\w+)\s+(.*?)\s*$`)
	x32Value = regexp.MustCompile(`^\(__X32_SYSCALL_BIT \+ (\d+)\)$`)
)

// parseHeader reads the __NR_ definitions of a uapi unistd header: plain
// numbers, or (__X32_SYSCALL_BIT + N) in unistd_x32.h.
func parseHeader(path string) ([]entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kernel header: %w", err)
	}
	var t []entry
	for i, line := range strings.Split(string(data), "\n") {
		m := defineNR.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		nr, err := headerValue(m[2])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: __NR_%s: %w", path, i+1, m[1], err)
		}
		t = append(t, entry{m[1], nr})
	}
	return checked(path, t)
}

func headerValue(v string) (uint32, error) {
	var bit uint64
	if m := x32Value.FindStringSubmatch(v); m != nil {
		v, bit = m[1], x32Bit
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n >= x32Bit {
		return 0, fmt.Errorf("unexpected value %q", v)
	}
	return uint32(n | bit), nil
}

// checked sorts a table by number and rejects what a table cannot hold. Two
// names for one number are kept, in source order, because the syscalls
// package treats the first as canonical and the rest as aliases; one name
// for two numbers would make lookups ambiguous.
func checked(source string, t []entry) ([]entry, error) {
	if len(t) == 0 {
		return nil, fmt.Errorf("%s: no system calls found", source)
	}
	seen := make(map[string]uint32, len(t))
	for _, e := range t {
		if nr, dup := seen[e.name]; dup {
			return nil, fmt.Errorf("%s: %s is defined as both %d and %d", source, e.name, nr, e.nr)
		}
		seen[e.name] = e.nr
	}
	slices.SortStableFunc(t, func(a, b entry) int { return cmp.Compare(a.nr, b.nr) })
	return t, nil
}

// mergeX32 adds to the x32 table of the installed headers the syscalls the
// kernel gained after those headers were cut.
//
// Those syscalls are the x86_64 entries of x/sys that the same headers'
// unistd_64.h lacks. Each is added to x32 under its x86_64 number with the
// x32 bit set, because since Linux 4.6 (preadv2 and pwritev2, the last calls
// to get x32 variants in 512-547) every syscall added to x86 has been
// declared "common" in arch/x86/entry/syscalls/syscall_64.tbl, that is,
// shared by x86_64 and x32 under one number, and the table forbids new
// entries in the x32 range. Comparing with unistd_64.h, rather than taking
// every number above the header's highest, also catches new calls that fill
// gaps below it, such as uretprobe (335, Linux 6.11).
//
// The sources are cross-checked on the way: a number the headers share by
// x86_64 and x32 must name the same call in x/sys, and an added call must
// not collide with the x32 range or an existing x32 entry.
func mergeX32(x32, old64, amd64 []entry) ([]entry, error) {
	if err := agree(x32, amd64); err != nil {
		return nil, err
	}
	known := make(map[uint32]bool, len(old64))
	for _, e := range old64 {
		known[e.nr] = true
	}
	merged := slices.Clone(x32)
	for _, e := range amd64 {
		if known[e.nr] {
			continue
		}
		if e.nr >= x32Legacy {
			return nil, fmt.Errorf("x86_64 syscall %s (%d) is newer than %s but lies in the x32 range", e.name, e.nr, header64)
		}
		if slices.ContainsFunc(x32, func(x entry) bool { return x.name == e.name || x.nr == e.nr|x32Bit }) {
			return nil, fmt.Errorf("x86_64 syscall %s (%d) is newer than %s but already in %s", e.name, e.nr, header64, headerX32)
		}
		merged = append(merged, entry{e.name, e.nr | x32Bit})
	}
	return checked("merged x32 table", merged)
}

// agree checks that the shared numbers of x32 name the same calls as x/sys's
// x86_64 table, which is what makes borrowing from it sound.
func agree(x32, amd64 []entry) error {
	names := make(map[uint32]string, len(amd64))
	for _, e := range amd64 {
		if _, dup := names[e.nr]; !dup {
			names[e.nr] = e.name
		}
	}
	for _, e := range x32 {
		if e.nr&x32Bit == 0 {
			return fmt.Errorf("%s: %s (%d) lacks the x32 bit", headerX32, e.name, e.nr)
		}
		nr := e.nr &^ x32Bit
		if nr < x32Legacy && names[nr] != e.name {
			return fmt.Errorf("%s has %s at %d, but x/sys's x86_64 table has %q", headerX32, e.name, nr, names[nr])
		}
	}
	return nil
}

// render writes tables.go. It names the sources without local paths so that
// every machine produces the same bytes.
func render(xsysVersion string, amd64, i386, x32 []entry) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by "go run ./internal/mktables"; DO NOT EDIT.

// Sources:
//
//	x86_64: %[1]s %[2]s, unix/zsysnum_linux_amd64.go
//	x86:    %[1]s %[2]s, unix/zsysnum_linux_386.go
//	x32:    %[3]s,
//	        plus the x86_64 calls absent from
//	        %[4]s
//
// Each table of tables is ascending by number; where two names share a
// number, the first is canonical.

package syscalls

var tables = [...][]entry{
`, xsysPath, xsysVersion, headerX32, header64)
	writeTable(&b, "X86_64", amd64, false)
	writeTable(&b, "I386", i386, false)
	writeTable(&b, "X32", x32, true)
	b.WriteString(`}

// byName holds the same tables ascending by name, for Lookup's binary
// search: sorted here, they cost a run nothing to index.
var byName = [...][]entry{
`)
	writeTable(&b, "X86_64", sortedByName(amd64), false)
	writeTable(&b, "I386", sortedByName(i386), false)
	writeTable(&b, "X32", sortedByName(x32), true)
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format tables: %w", err)
	}
	return src, nil
}

func sortedByName(t []entry) []entry {
	return slices.SortedFunc(slices.Values(t), func(a, b entry) int { return cmp.Compare(a.name, b.name) })
}

// writeTable spells x32 numbers as X32Bit | N so that they read like the
// kernel's syscall table.
func writeTable(b *bytes.Buffer, arch string, t []entry, x32 bool) {
	fmt.Fprintf(b, "\t%s: {\n", arch)
	for _, e := range t {
		if x32 {
			fmt.Fprintf(b, "\t\t{%q, X32Bit | %d},\n", e.name, e.nr&^x32Bit)
			continue
		}
		fmt.Fprintf(b, "\t\t{%q, %d},\n", e.name, e.nr)
	}
	b.WriteString("\t},\n")
}
