package privilege

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// parseAddrfilter reads addrfilter's whitelist, as afgen writes it and
// syso-wl-conv converts syso's counts into: one [files] table mapping each
// object, by path or file name, to the x86_64 numbers of the syscalls it
// may make:
//
//	[files]
//	  "libgetpid.so" = [39]
//	  "/usr/sbin/nginx" = [0, 1, 3]
//
// A number listed twice is scored once. As with syso's counts, every key
// is a compartment, FAILED included.
//
// Like syscell's policy reader, it walks the syntax tree of go-toml's
// unstable parser, which knows the line of every key and number.
func parseAddrfilter(name string, data []byte) (*Allowlists, error) {
	r := &whitelistReader{name: name, lines: map[string]int{}}
	r.p.Reset(data)
	a := &Allowlists{Source: name, Format: Addrfilter}
	for r.p.NextExpression() {
		e := r.p.Expression()
		if e.Kind != unstable.KeyValue {
			if err := r.table(e); err != nil {
				return nil, err
			}
			continue
		}
		c, err := r.file(e)
		if err != nil {
			return nil, err
		}
		a.Compartments = append(a.Compartments, c)
	}
	if err := r.p.Error(); err != nil {
		return nil, r.syntaxError(err)
	}
	if len(a.Compartments) == 0 {
		return nil, errorAt(name, r.files, "no files: the whitelist names no library")
	}
	return a, nil
}

// whitelistReader reads an addrfilter whitelist one expression at a time.
type whitelistReader struct {
	name string
	p    unstable.Parser
	// files is the line of the [files] header, which detect has seen
	// open the document.
	files int
	// lines holds the line of each file's key.
	lines map[string]int
}

// table accepts the one [files] header.
func (r *whitelistReader) table(e *unstable.Node) error {
	key, parts := tomlKey(e)
	line := r.line(key)
	if e.Kind != unstable.Table || parts != 1 || string(key.Data) != "files" || r.files != 0 {
		return errorAt(r.name, line, "unexpected table: an addrfilter whitelist holds one [files] table and nothing else")
	}
	r.files = line
	return nil
}

// file reads one library's syscall numbers.
func (r *whitelistReader) file(kv *unstable.Node) (Compartment, error) {
	key, parts := tomlKey(kv)
	lib, line := string(key.Data), r.line(key)
	if parts != 1 {
		return Compartment{}, errorAt(r.name, line, "dotted key: quote a file name that holds dots, as in \"libc.so.6\" = [...]")
	}
	if first, dup := r.lines[lib]; dup {
		return Compartment{}, errorAt(r.name, line, "%q given twice (first at line %d)", lib, first)
	}
	r.lines[lib] = line
	v := kv.Value()
	if v.Kind != unstable.Array {
		return Compartment{}, errorAt(r.name, line, "%q must be an array of syscall numbers, found %s", lib, kindName(v.Kind))
	}
	c := Compartment{Name: lib}
	for it := v.Children(); it.Next(); {
		name, err := number(it.Node())
		if err != nil {
			return Compartment{}, errorAt(r.name, r.line(it.Node()), "%q: %v", lib, err)
		}
		c.Syscalls = append(c.Syscalls, name)
	}
	return newCompartment(c), nil
}

// number names the x86_64 syscall an array element numbers.
func number(n *unstable.Node) (string, error) {
	if n.Kind != unstable.Integer {
		return "", fmt.Errorf("want syscall numbers, found %s", kindName(n.Kind))
	}
	// The parser has checked TOML's integer syntax, which base 0 reads
	// (prefixes, underscores) except where it is out of range.
	v, err := strconv.ParseInt(string(n.Data), 0, 64)
	if err != nil {
		return "", fmt.Errorf("integer %s out of range", n.Data)
	}
	return x86_64Name(v)
}

// line is the line where n was written.
func (r *whitelistReader) line(n *unstable.Node) int { return r.p.Shape(n.Raw).Start.Line }

// syntaxError places a parser error at the line of the text it highlights.
func (r *whitelistReader) syntaxError(err error) error {
	data := r.p.Data()
	line := lineAt(data, len(data))
	var perr *unstable.ParserError
	if errors.As(err, &perr) && perr.Highlight != nil {
		line = r.p.Shape(r.p.Range(perr.Highlight)).Start.Line
	}
	return errorAt(r.name, line, "TOML syntax: %v", err)
}

// kindName writes a TOML kind in lower case: "string", "inlinetable".
func kindName(k unstable.Kind) string { return strings.ToLower(k.String()) }
