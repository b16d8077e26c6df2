package cell

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/policy"
)

// Compartments that name no file, as package record writes them: the
// runtime's own calls (start-up, exit), and anonymous executable memory.
const (
	runtimeCompartment  = "[runtime]"
	anonExecCompartment = "[anon-exec]"
)

// identity names a compartment's objects. The rule, which the audit
// library applies to the objects it sees (audit/object.c) and the
// supervisor to the objects it unwinds through: a compartment with a
// path (or, without one, a name holding a slash) matches the file found
// there when syscell starts, by device and inode, whatever path the
// loader finds it by, and, if no file is there yet, the objects of its
// build-id with its file name, or nothing without a build-id; one with a
// build-id matches that build-id; one with both matches the objects that
// have both, as package record tells compartments apart; one with neither
// matches the objects whose soname or file name is its name. Runtime
// objects (libc, the loader, the vDSO) belong to no compartment, and an
// object belongs to the first compartment, in policy order, that matches
// it.
type identity struct {
	buildID string
	// file says that dev and ino name the compartment's file.
	file     bool
	dev, ino uint64
	name     string
	// nothing marks a compartment that matches no object.
	nothing bool
}

// identityOf resolves how c names its objects.
func identityOf(c policy.Compartment) (identity, error) {
	if c.Name == runtimeCompartment || c.Name == anonExecCompartment {
		return identity{nothing: true}, nil
	}
	id := identity{buildID: strings.ToLower(c.BuildID)}
	path := c.Path
	if path == "" && strings.ContainsRune(c.Name, '/') {
		path = c.Name
	}
	if path == "" && id.buildID == "" {
		if strings.ContainsAny(c.Name, "\n; ") {
			return identity{}, fmt.Errorf("cell: compartment %q: a name matched against files cannot hold a space, a newline or a semicolon", c.Name)
		}
		id.name = c.Name
		return id, nil
	}
	if path == "" {
		return id, nil
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, fs.ErrNotExist) && id.buildID != "" && !strings.ContainsAny(path, "\n; ") {
		// A program the command builds and runs (make running gcc,
		// then the program it built): the same build, loaded under
		// the same file name.
		id.name = filepath.Base(path)
		return id, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return identity{nothing: true}, nil
	}
	if err != nil {
		return identity{}, fmt.Errorf("cell: compartment %q: %s: %w", c.Name, path, err)
	}
	id.file, id.dev, id.ino = true, st.Dev, st.Ino
	return id, nil
}

// matches says whether o belongs to the compartment, runtime aside.
func (id identity) matches(o *attribute.Object) bool {
	switch {
	case id.nothing, o.Kind != attribute.File:
		return false
	case id.buildID != "" && o.BuildID != id.buildID:
		return false
	case id.file && (o.Dev != id.dev || o.Ino != id.ino):
		return false
	case id.name != "":
		return o.Soname == id.name || filepath.Base(o.Path) == id.name
	}
	return true
}

// line is how the identity travels to the audit library (audit/config.c):
// "BUILD-ID DEV INO NAME", each "-" when absent, or "nothing".
func (id identity) line() string {
	if id.nothing {
		return "nothing"
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	dev, ino := "-", "-"
	if id.file {
		dev, ino = fmt.Sprint(id.dev), fmt.Sprint(id.ino)
	}
	return strings.Join([]string{dash(id.buildID), dev, ino, dash(id.name)}, " ")
}

// identities are a policy's compartments, in slot order.
type identities struct {
	names []string
	ids   []identity
}

func newIdentities(p *policy.Policy) (*identities, error) {
	ids := &identities{}
	for _, c := range p.Compartments {
		id, err := identityOf(c)
		if err != nil {
			return nil, err
		}
		ids.names = append(ids.names, c.Name)
		ids.ids = append(ids.ids, id)
	}
	return ids, nil
}

// compartmentOf returns the compartment o belongs to, if any.
// slot is the window slot of compartment name, -1 for none.
func (ids *identities) slot(name string) int { return slices.Index(ids.names, name) }

func (ids *identities) compartmentOf(o *attribute.Object) (string, bool) {
	if o.Runtime {
		return "", false
	}
	for i, id := range ids.ids {
		if id.matches(o) {
			return ids.names[i], true
		}
	}
	return "", false
}
