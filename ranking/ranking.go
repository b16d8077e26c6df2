// Package ranking scores system calls by the danger of allowing them, for
// syscell's privilege metric.
//
// Rankings are embedded YAML tables (see data/README.md): "younis2014", the
// table of Younis, Malaiya and Ray (HASE 2014) exactly as published, for
// comparison with the paper, and "default", syscell's corrected version.
package ranking

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/syscell/syscell/syscalls"
)

// Scores of the levels a ranking assigns.
const (
	Low    = 1 // every call a ranking does not list
	Medium = 2 // listed as medium-threat
	High   = 3 // listed as high-threat
)

//go:embed data/*.yaml
var data embed.FS

// Ranking assigns each system call a danger level. Levels belong to names,
// so a call scores the same on every ABI that has it.
type Ranking struct {
	levels map[string]int // calls above Low
}

// file is the layout of a ranking table. Entries stay YAML nodes so that a
// number can be told from a name, an empty entry is not silently dropped,
// and errors can cite lines.
type file struct {
	Syscalls struct {
		High   []yaml.Node `yaml:"high-threat"`
		Medium []yaml.Node `yaml:"medium-threat"`
	} `yaml:"syscalls"`
}

// Names lists the rankings Load accepts, sorted.
func Names() []string {
	files, err := data.ReadDir("data")
	if err != nil {
		panic(fmt.Sprintf("embedded rankings: %v", err)) // the directory is part of the binary
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f.Name(), path.Ext(f.Name())))
	}
	return names
}

// Load returns the named ranking.
func Load(name string) (*Ranking, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("unknown ranking %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	src, err := data.ReadFile("data/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("ranking %s: %w", name, err)
	}
	r, err := parse(src)
	if err != nil {
		return nil, fmt.Errorf("ranking %s: %w", name, err)
	}
	return r, nil
}

// parse reads a ranking table. A call listed at both levels, as mount is in
// the published table, takes the higher.
func parse(src []byte) (*Ranking, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	r := &Ranking{levels: make(map[string]int)}
	if err := r.add("high-threat", f.Syscalls.High, High); err != nil {
		return nil, err
	}
	if err := r.add("medium-threat", f.Syscalls.Medium, Medium); err != nil {
		return nil, err
	}
	if len(r.levels) == 0 {
		return nil, errors.New("no system calls ranked")
	}
	return r, nil
}

func (r *Ranking) add(level string, entries []yaml.Node, score int) error {
	for _, e := range entries {
		name, err := entryName(&e)
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", level, e.Line, err)
		}
		r.levels[name] = max(r.levels[name], score)
	}
	return nil
}

// entryName accepts a name known on any ABI, so that x86-only calls can be
// ranked, or a number, which the published table gives for x86_64.
func entryName(entry *yaml.Node) (string, error) {
	switch {
	case entry.Kind == yaml.ScalarNode && entry.Tag == "!!str":
		if !syscalls.Known(entry.Value) {
			return "", fmt.Errorf("unknown syscall %q", entry.Value)
		}
		return entry.Value, nil
	case entry.Kind == yaml.ScalarNode && entry.Tag == "!!int":
		nr, err := strconv.ParseUint(entry.Value, 0, 32)
		if err != nil {
			return "", fmt.Errorf("syscall number %q: %w", entry.Value, err.(*strconv.NumError).Err)
		}
		name, ok := syscalls.Name(syscalls.X86_64, uint32(nr))
		if !ok {
			return "", fmt.Errorf("no x86_64 syscall has number %d", nr)
		}
		return name, nil
	}
	return "", fmt.Errorf("want a syscall name or x86_64 number, got %s", entry.Tag)
}

// Score is the level of system call nr on a; a number the ABI does not
// define scores Low.
func (r *Ranking) Score(a syscalls.Arch, nr uint32) int {
	name, ok := syscalls.Name(a, nr)
	if !ok {
		return Low
	}
	return r.ScoreName(name)
}

// ScoreName is the level of the named system call; a call the ranking does
// not list scores Low.
func (r *Ranking) ScoreName(name string) int {
	if score, ok := r.levels[name]; ok {
		return score
	}
	return Low
}
