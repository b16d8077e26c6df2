package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Load reads an earlier recording to merge: a policy in syscell's TOML
// (the counts of the calls come from the comments record writes, where
// present) or syso JSON. Only what a recording can hold is accepted:
// compartments, and rules that allow calls unconditionally. Problems are
// *policy.Error, with the file and line.
func Load(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		return loadSyso(path, data)
	}
	p, err := policy.Parse(path, data)
	if err != nil {
		return nil, err
	}
	counts, err := readCounts(data)
	if err != nil {
		return nil, &policy.Error{Pos: policy.Pos{File: path}, Msg: err.Error()}
	}
	return fromPolicy(p, counts)
}

// fromPolicy turns a parsed policy into a recording.
func fromPolicy(p *policy.Policy, counts map[string]map[string]uint64) (*Recording, error) {
	rec := &Recording{Arches: p.Arches, Unknown: map[uint32]uint64{}, Source: p.Source}
	if p.Phased() {
		rec.ServingFrom = servingSet(p.ServingFrom)
	}
	if len(p.VDSO) > 0 {
		rec.VDSO = slices.Compact(slices.Sorted(slices.Values(p.VDSO)))
	}
	inCompartment := map[string]bool{}
	for _, pc := range p.Compartments {
		c := &Compartment{Name: pc.Name, Path: pc.Path, BuildID: pc.BuildID, Calls: map[string]uint64{}, Execs: setOf(pc.Exec)}
		if pc.Reach != nil {
			c.Reach = map[string]bool{}
			for _, name := range pc.Reach {
				c.Reach[name] = true
			}
		}
		for _, name := range pc.Syscalls {
			c.Calls[name] = counts[pc.Name][name]
			inCompartment[name] = true
		}
		if p.Phased() {
			c.Serving = map[string]uint64{}
			for _, name := range p.ServingCalls(pc) {
				c.Serving[name] = 0
			}
		}
		rec.Compartments = append(rec.Compartments, c)
	}
	for _, rule := range p.Rules {
		if rule.Action != policy.ActAllow {
			return nil, &policy.Error{Pos: rule.Pos, Msg: fmt.Sprintf("a recording's rules allow calls; this rule's action is %s", rule.Action)}
		}
		if len(rule.Conds) > 0 {
			return nil, &policy.Error{Pos: rule.Pos, Msg: "a recording's rules allow calls whatever their arguments; this rule has conditions"}
		}
		for _, name := range rule.Syscalls {
			if !inCompartment[name] {
				rec.Allowed = append(rec.Allowed, name)
			}
		}
	}
	return rec, nil
}

// readCounts reads the counts record writes as comments after each call of
// a compartment ("getpid", # 3 calls): counts[compartment][call].
func readCounts(data []byte) (map[string]map[string]uint64, error) {
	counts := map[string]map[string]uint64{}
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	inCompartment, name := false, ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.ArrayTable, unstable.Table:
			inCompartment, name = firstKey(e) == "compartment", ""
		case unstable.KeyValue:
			if !inCompartment {
				continue
			}
			key, value := firstKey(e), e.Value()
			switch {
			case key == "name" && value.Kind == unstable.String:
				name = string(value.Data)
			case key == "syscalls" && value.Kind == unstable.Array && name != "":
				counts[name] = arrayCounts(value)
			}
		}
	}
	return counts, p.Error()
}

// firstKey returns the first part of a table header's or key-value's key.
func firstKey(n *unstable.Node) string {
	it := n.Key()
	if !it.Next() {
		return ""
	}
	return string(it.Node().Data)
}

// arrayCounts pairs each string of an array with the count in the comment
// that follows it.
func arrayCounts(array *unstable.Node) map[string]uint64 {
	counts := map[string]uint64{}
	last := ""
	it := array.Children()
	for it.Next() {
		n := it.Node()
		switch n.Kind {
		case unstable.String:
			last = string(n.Data)
		case unstable.Comment:
			if c, ok := parseCount(string(n.Data)); ok && last != "" {
				counts[last] = c
			}
			last = ""
		}
	}
	return counts
}

// parseCount reads "# 12 calls" or "# 1 call".
func parseCount(comment string) (uint64, bool) {
	fields := strings.Fields(strings.TrimPrefix(comment, "#"))
	if len(fields) != 2 || (fields[1] != "calls" && fields[1] != "call") {
		return 0, false
	}
	n, err := strconv.ParseUint(fields[0], 10, 64)
	return n, err == nil
}

// loadSyso reads syso JSON: {"compartment": {"x86_64 number": count}}.
func loadSyso(path string, data []byte) (*Recording, error) {
	var in map[string]map[string]uint64
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, jsonError(path, data, err)
	}
	rec := &Recording{Unknown: map[uint32]uint64{}, Source: path}
	for name, calls := range in {
		c := &Compartment{Name: name, Calls: map[string]uint64{}}
		if name == SysoFailed {
			failed, err := sysoNames(path, data, name, calls)
			if err != nil {
				return nil, err
			}
			rec.Failures = append(rec.Failures, Failure{Where: "[an earlier run]", Reason: "unattributed there", Calls: failed})
			continue
		}
		if strings.HasPrefix(name, "/") {
			c.Path = name
		}
		var err error
		if c.Calls, err = sysoNames(path, data, name, calls); err != nil {
			return nil, err
		}
		if name == StartUpName {
			rec.StartUp = c.Calls
			continue
		}
		rec.Compartments = append(rec.Compartments, c)
	}
	return rec, nil
}

// sysoNames names the calls of one syso JSON compartment.
func sysoNames(path string, data []byte, owner string, calls map[string]uint64) (map[string]uint64, error) {
	out := map[string]uint64{}
	for nr, n := range calls {
		call, err := sysoCall(nr)
		if err != nil {
			return nil, &policy.Error{Pos: policy.Pos{File: path, Line: lineOf(data, strconv.Quote(nr))}, Msg: fmt.Sprintf("compartment %q: %v", owner, err)}
		}
		out[call] += n
	}
	return out, nil
}

func sysoCall(nr string) (string, error) {
	n, err := strconv.ParseUint(nr, 10, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a syscall number", nr)
	}
	name, ok := syscalls.Name(syscalls.X86_64, uint32(n))
	if !ok {
		return "", fmt.Errorf("no x86_64 syscall has number %d", n)
	}
	return name, nil
}

// jsonError places a JSON decoding error on its line.
func jsonError(path string, data []byte, err error) error {
	line := 0
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line = 1 + bytes.Count(data[:min(int(syntax.Offset), len(data))], []byte{'\n'})
	case errors.As(err, &typ):
		line = 1 + bytes.Count(data[:min(int(typ.Offset), len(data))], []byte{'\n'})
	}
	return &policy.Error{Pos: policy.Pos{File: path, Line: line}, Msg: "syso JSON: " + err.Error()}
}

// lineOf is the line of the first occurrence of s in data, or 0.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(data[:i], []byte{'\n'})
}

// setOf is names as a set, nil when empty.
func setOf(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set
}
