package policy

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/syscell/syscell/syscalls"
)

// Version is the version of syscell's TOML format that Parse reads and
// WriteTOML writes.
const Version = 1

// Parse reads a policy in syscell's TOML format. name stands for the file in
// positions; every error is an *Error naming the line at fault.
//
// Parse walks the syntax tree of go-toml's unstable parser rather than
// decoding into structs, because only the tree knows where each [[rule]]
// header, key and array element was written.
func Parse(name string, data []byte) (*Policy, error) {
	if what := notText(data); what != "" {
		return nil, &Error{Pos: Pos{File: name}, Msg: what}
	}
	d := &tomlDecoder{
		name:  name,
		data:  data,
		pol:   &Policy{BadArch: ActKillProcess, Source: name},
		lines: map[string]int{},
	}
	d.p.Reset(data)
	for d.p.NextExpression() {
		if err := d.expression(d.p.Expression()); err != nil {
			return nil, err
		}
	}
	if err := d.p.Error(); err != nil {
		return nil, d.syntaxError(err)
	}
	if err := d.endTable(); err != nil {
		return nil, err
	}
	if err := d.pol.Validate(); err != nil {
		return nil, err
	}
	return d.pol, nil
}

// tomlDecoder builds a Policy from a document's expressions, one at a time.
type tomlDecoder struct {
	name string
	data []byte
	p    unstable.Parser
	pol  *Policy

	// table is the array table whose keys are being read: "rule",
	// "compartment", or "" for the top level before any header.
	table string
	// header is where table's [[header]] was written.
	header Pos
	// lines holds the line of each key set in table.
	lines map[string]int
	rule  Rule
	comp  Compartment
}

func (d *tomlDecoder) expression(n *unstable.Node) error {
	switch n.Kind {
	case unstable.KeyValue:
		return d.keyValue(n)
	case unstable.Table, unstable.ArrayTable:
		return d.startTable(n)
	}
	return nil
}

func (d *tomlDecoder) keyValue(kv *unstable.Node) error {
	key, _ := keyOf(kv)
	if first, dup := d.lines[key]; dup {
		return d.errorf(kv, "duplicate key %q (first set at line %d)", key, first)
	}
	d.lines[key] = d.pos(kv).Line
	switch d.table {
	case "rule":
		return d.setRule(key, kv)
	case "compartment":
		return d.setCompartment(key, kv)
	}
	return d.setTop(key, kv)
}

// startTable ends the table being read and starts the one n opens. Only
// arrays of tables exist in a policy: [[rule]] and [[compartment]].
func (d *tomlDecoder) startTable(n *unstable.Node) error {
	if err := d.endTable(); err != nil {
		return err
	}
	name, first := keyOf(n)
	pos := d.pos(first)
	switch {
	case name != "rule" && name != "compartment":
		return errorAt(pos, "unknown table %q (want [[rule]] or [[compartment]])", name)
	case n.Kind != unstable.ArrayTable:
		return errorAt(pos, "write [[%s]], with double brackets: a policy holds a list of them", name)
	}
	d.table, d.header, d.lines = name, pos, map[string]int{}
	d.rule = Rule{Pos: pos}
	d.comp = Compartment{Pos: pos}
	return nil
}

// endTable checks the table just read for required keys and adds it to the
// policy. Each table ends exactly once, the top level included.
func (d *tomlDecoder) endTable() error {
	switch d.table {
	case "rule":
		return d.endRule()
	case "compartment":
		return d.endCompartment()
	}
	return d.endTop()
}

func (d *tomlDecoder) setTop(key string, kv *unstable.Node) error {
	var err error
	switch key {
	case "version":
		var v int64
		if v, err = d.integer(key, kv); err == nil && v != Version {
			err = d.errorf(kv, "unsupported version %d (want %d)", v, Version)
		}
	case "default":
		d.pol.Default, err = d.action(key, kv)
	case "bad-arch":
		d.pol.BadArch, err = d.action(key, kv)
	case "arches":
		err = d.eachString(key, kv, func(s string) error {
			a, err := syscalls.ParseArch(s)
			if err == nil {
				d.pol.Arches = append(d.pol.Arches, a)
			}
			return err
		})
	case "io_uring":
		d.pol.IOURing = []string{}
		err = d.eachString(key, kv, func(s string) error {
			d.pol.IOURing = append(d.pol.IOURing, s)
			return checkIOURing(s)
		})
	case "serving-from":
		d.pol.ServingFrom, err = d.syscalls(key, kv)
	case "vdso":
		d.pol.VDSO = []string{}
		err = d.eachString(key, kv, func(s string) error {
			d.pol.VDSO = append(d.pol.VDSO, s)
			return checkSymbol(s)
		})
	case "rule", "compartment":
		err = d.errorf(kv, "write %q as [[%s]] tables", key, key)
	default:
		err = d.errorf(kv, "unknown key %q (want version, default, bad-arch, arches, io_uring, serving-from or vdso)", key)
	}
	return err
}

func (d *tomlDecoder) endTop() error {
	for _, key := range []string{"version", "default"} {
		if _, ok := d.lines[key]; !ok {
			return errorAt(Pos{File: d.name, Line: 1}, "missing %q", key)
		}
	}
	return nil
}

func (d *tomlDecoder) setRule(key string, kv *unstable.Node) error {
	var err error
	switch key {
	case "action":
		d.rule.Action, err = d.action(key, kv)
	case "syscalls":
		if d.rule.Syscalls, err = d.syscalls(key, kv); err == nil && len(d.rule.Syscalls) == 0 {
			err = d.errorf(kv, "empty syscalls list: a rule names at least one syscall")
		}
	case "args":
		err = d.eachString(key, kv, func(s string) error {
			c, err := ParseCond(s)
			if err == nil {
				d.rule.Conds = append(d.rule.Conds, c)
			}
			return err
		})
	default:
		err = d.errorf(kv, "unknown key %q in [[rule]] (want action, syscalls or args)", key)
	}
	return err
}

func (d *tomlDecoder) endRule() error {
	for _, key := range []string{"action", "syscalls"} {
		if _, ok := d.lines[key]; !ok {
			return errorAt(d.header, "[[rule]] has no %q", key)
		}
	}
	d.pol.Rules = append(d.pol.Rules, d.rule)
	return nil
}

func (d *tomlDecoder) setCompartment(key string, kv *unstable.Node) error {
	var err error
	switch key {
	case "name":
		if d.comp.Name, err = d.str(key, kv); err == nil && d.comp.Name == "" {
			err = d.errorf(kv, "empty compartment name")
		}
	case "path":
		d.comp.Path, err = d.str(key, kv)
	case "build-id":
		if d.comp.BuildID, err = d.str(key, kv); err == nil {
			d.comp.BuildID, err = parseBuildID(d.comp.BuildID)
			err = d.wrap(kv.Value(), kv, err)
		}
	case "syscalls":
		d.comp.Syscalls, err = d.syscalls(key, kv)
	case "exec":
		d.comp.Exec = []string{}
		err = d.eachString(key, kv, func(s string) error {
			d.comp.Exec = append(d.comp.Exec, s)
			return nil
		})
	case "reach":
		d.comp.Reach, err = d.syscalls(key, kv)
	case "serving":
		d.comp.Serving, err = d.syscalls(key, kv)
	default:
		err = d.errorf(kv, "unknown key %q in [[compartment]] (want name, path, build-id, syscalls, exec, reach or serving)", key)
	}
	return err
}

func (d *tomlDecoder) endCompartment() error {
	if _, ok := d.lines["name"]; !ok {
		return errorAt(d.header, "[[compartment]] has no \"name\"")
	}
	d.pol.Compartments = append(d.pol.Compartments, d.comp)
	return nil
}

// parseBuildID accepts a GNU build-id in hex, either case, and returns it in
// lower case so that equal ids compare equal.
func parseBuildID(s string) (string, error) {
	if _, err := hex.DecodeString(s); err != nil || s == "" {
		return "", fmt.Errorf("build-id %q is not an even number of hex digits", s)
	}
	return strings.ToLower(s), nil
}

func (d *tomlDecoder) syscalls(key string, kv *unstable.Node) ([]string, error) {
	names := []string{}
	err := d.eachString(key, kv, func(s string) error {
		names = append(names, s)
		return checkSyscall(s)
	})
	return names, err
}

func (d *tomlDecoder) action(key string, kv *unstable.Node) (Action, error) {
	s, err := d.str(key, kv)
	if err != nil {
		return Action{}, err
	}
	a, err := ParseAction(s)
	return a, d.wrap(kv.Value(), kv, err)
}

func (d *tomlDecoder) str(key string, kv *unstable.Node) (string, error) {
	v := kv.Value()
	if v.Kind != unstable.String {
		return "", d.errorf(kv, "%q must be a string, not %s", key, kindName(v.Kind))
	}
	return string(v.Data), nil
}

func (d *tomlDecoder) integer(key string, kv *unstable.Node) (int64, error) {
	v := kv.Value()
	if v.Kind != unstable.Integer {
		return 0, d.errorf(kv, "%q must be an integer, not %s", key, kindName(v.Kind))
	}
	// The parser has checked TOML's integer syntax, which base 0 reads
	// (prefixes, underscores) except where it is out of range.
	n, err := strconv.ParseInt(string(v.Data), 0, 64)
	if err != nil {
		return 0, d.errorf(kv, "%q: integer %s out of range", key, v.Data)
	}
	return n, nil
}

// eachString calls f with each string of an array value; an error from f is
// placed on the element's line.
func (d *tomlDecoder) eachString(key string, kv *unstable.Node, f func(string) error) error {
	v := kv.Value()
	if v.Kind != unstable.Array {
		return d.errorf(kv, "%q must be an array of strings, not %s", key, kindName(v.Kind))
	}
	for it := v.Children(); it.Next(); {
		e := it.Node()
		if e.Kind != unstable.String {
			return d.wrap(e, kv, fmt.Errorf("%q must hold strings, not %s", key, kindName(e.Kind)))
		}
		if err := f(string(e.Data)); err != nil {
			return d.wrap(e, kv, err)
		}
	}
	return nil
}

// wrap places err at value n, or at the key-value kv holding it when the
// parser recorded no position for n (arrays, for one).
func (d *tomlDecoder) wrap(n, kv *unstable.Node, err error) error {
	if err == nil {
		return nil
	}
	if n.Raw.Length == 0 {
		n = kv
	}
	return errorAt(d.pos(n), "%v", err)
}

func (d *tomlDecoder) pos(n *unstable.Node) Pos {
	return Pos{File: d.name, Line: lineAt(d.data, int(n.Raw.Offset))}
}

func (d *tomlDecoder) errorf(n *unstable.Node, format string, args ...any) error {
	return errorAt(d.pos(n), format, args...)
}

// syntaxError places a parser error. Its highlight is a slice of the input,
// so its offset is the difference of capacities, as go-toml computes it.
func (d *tomlDecoder) syntaxError(err error) error {
	off := len(d.data)
	var perr *unstable.ParserError
	if errors.As(err, &perr) && perr.Highlight != nil {
		off = cap(d.data) - cap(perr.Highlight)
	}
	return errorAt(Pos{File: d.name, Line: lineAt(d.data, off)}, "TOML syntax: %v", err)
}

// keyOf returns the key of a key-value or table header, its dotted parts
// joined, and the node of its first part, which holds its position.
func keyOf(n *unstable.Node) (string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it := n.Key(); it.Next(); {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, "."), first
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "a table"
	}
	return "a date or time"
}
