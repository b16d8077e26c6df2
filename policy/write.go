package policy

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// WriteOptions adjust what WriteTOMLWithOptions writes.
type WriteOptions struct {
	// Comments annotate compartments' syscalls: Comments[name][syscall],
	// such as "1532 calls", is written after that syscall in the
	// compartment called name.
	Comments map[string]map[string]string
}

// WriteTOML writes p in syscell's TOML format, which Parse reads back to a
// policy that decides every call the same way. The output depends only on
// what p means, so that policies diff well: header keys, then one [[rule]]
// per action and set of conditions (see groups) with syscalls sorted, then
// compartments sorted by name. Positions and the order of rules are not kept.
func (p *Policy) WriteTOML(w io.Writer) error {
	return p.WriteTOMLWithOptions(w, WriteOptions{})
}

// WriteTOMLWithOptions is WriteTOML with annotations.
func (p *Policy) WriteTOMLWithOptions(w io.Writer, opts WriteOptions) error {
	// A policy Parse would reject must not be written as if it were fine.
	if err := p.Validate(); err != nil {
		return fmt.Errorf("write policy: %w", err)
	}
	var b tomlBuilder
	b.header(p)
	for _, g := range p.groups() {
		b.rule(g)
	}
	comps := slices.Clone(p.Compartments)
	slices.SortFunc(comps, func(a, b Compartment) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range comps {
		b.compartment(c, opts.Comments[c.Name])
	}
	if b.err != nil {
		return fmt.Errorf("write policy %s: %w", p.Source, b.err)
	}
	if _, err := w.Write(b.buf.Bytes()); err != nil {
		return fmt.Errorf("write policy %s: %w", p.Source, err)
	}
	return nil
}

// tomlBuilder accumulates a document; the first error sticks, so that
// writing code need not check after every line.
type tomlBuilder struct {
	buf bytes.Buffer
	err error
}

func (b *tomlBuilder) header(p *Policy) {
	fmt.Fprintf(&b.buf, "version = %d\n", Version)
	b.keyString("default", p.Default.String())
	b.keyString("bad-arch", p.BadArch.String())
	if len(p.Arches) > 0 {
		arches := slices.Clone(p.Arches)
		slices.Sort(arches)
		var names []string
		for _, a := range slices.Compact(arches) {
			names = append(names, a.String())
		}
		b.inlineArray("arches", names)
	}
	if len(p.IOURing) > 0 {
		ops := slices.Clone(p.IOURing)
		slices.Sort(ops)
		b.names("io_uring", slices.Compact(ops), nil)
	}
	if len(p.ServingFrom) > 0 {
		b.names("serving-from", sortedSet(p.ServingFrom), nil)
	}
	if len(p.VDSO) > 0 {
		b.names("vdso", sortedSet(p.VDSO), nil)
	}
}

// sortedSet is names sorted, each once.
func sortedSet(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

func (b *tomlBuilder) rule(g ruleGroup) {
	b.buf.WriteString("\n[[rule]]\n")
	b.keyString("action", g.action.String())
	b.names("syscalls", g.names, nil)
	if len(g.conds) == 0 {
		return
	}
	conds := make([]string, len(g.conds))
	for i, c := range g.conds {
		conds[i] = c.String()
	}
	b.inlineArray("args", conds)
}

func (b *tomlBuilder) compartment(c Compartment, comments map[string]string) {
	b.buf.WriteString("\n[[compartment]]\n")
	b.keyString("name", c.Name)
	if c.Path != "" {
		b.keyString("path", c.Path)
	}
	if c.BuildID != "" {
		b.keyString("build-id", c.BuildID)
	}
	names := slices.Clone(c.Syscalls)
	slices.Sort(names)
	b.names("syscalls", slices.Compact(names), comments)
	if len(c.Exec) > 0 {
		execs := slices.Clone(c.Exec)
		slices.Sort(execs)
		b.names("exec", slices.Compact(execs), nil)
	}
	if c.Reach != nil {
		reach := slices.Clone(c.Reach)
		slices.Sort(reach)
		b.names("reach", slices.Compact(reach), nil)
	}
	if c.Serving != nil {
		b.names("serving", sortedSet(c.Serving), nil)
	}
}

func (b *tomlBuilder) keyString(key, s string) {
	fmt.Fprintf(&b.buf, "%s = %s\n", key, b.quote(s))
}

func (b *tomlBuilder) inlineArray(key string, elems []string) {
	quoted := make([]string, len(elems))
	for i, e := range elems {
		quoted[i] = b.quote(e)
	}
	fmt.Fprintf(&b.buf, "%s = [%s]\n", key, strings.Join(quoted, ", "))
}

// names writes syscall names one per line, so that adding or removing one
// changes one line of a diff, each followed by its comment if it has one.
// A single name without a comment stays on the key's line.
func (b *tomlBuilder) names(key string, names []string, comments map[string]string) {
	if len(names) == 0 || len(names) == 1 && comments[names[0]] == "" {
		b.inlineArray(key, names)
		return
	}
	fmt.Fprintf(&b.buf, "%s = [\n", key)
	for _, name := range names {
		fmt.Fprintf(&b.buf, "  %s,", b.quote(name))
		if c := comments[name]; c != "" {
			b.check(checkComment(name, c))
			fmt.Fprintf(&b.buf, " # %s", c)
		}
		b.buf.WriteByte('\n')
	}
	b.buf.WriteString("]\n")
}

func (b *tomlBuilder) check(err error) {
	if b.err == nil {
		b.err = err
	}
}

// quote writes s as a TOML basic string. Go's strconv.Quote does not do:
// its \x and \a escapes are not TOML.
func (b *tomlBuilder) quote(s string) string {
	if !utf8.ValidString(s) {
		b.check(fmt.Errorf("%q is not UTF-8, which TOML requires", s))
	}
	var q strings.Builder
	q.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			q.WriteByte('\\')
			q.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&q, `\u%04X`, r)
		default:
			q.WriteRune(r)
		}
	}
	q.WriteByte('"')
	return q.String()
}

// checkComment refuses what would end a TOML comment early or is not
// allowed in one: line breaks and other control characters.
func checkComment(name, c string) error {
	for _, r := range c {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return fmt.Errorf("comment on %q has control character %q", name, r)
		}
	}
	if !utf8.ValidString(c) {
		return fmt.Errorf("comment on %q is not UTF-8", name)
	}
	return nil
}
