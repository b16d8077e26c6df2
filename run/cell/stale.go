package cell

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/policy"
)

// Stale is a compartment that names an object the disk no longer holds as
// the policy was written for: no file at its path, or a file of another
// build. Such a compartment matches no object (identity.go), so the
// program's code there gets no compartment and its calls are denied.
type Stale struct {
	Compartment string
	Pos         policy.Pos
	Problem     string
}

func (s Stale) String() string {
	return fmt.Sprintf("%s: compartment %q: %s", s.Pos, s.Compartment, s.Problem)
}

// StaleCompartments lists the compartments of p whose objects are stale,
// in policy order. Compartments named by soname or build-id alone name no
// file, and are never stale.
func StaleCompartments(p *policy.Policy) []Stale {
	var out []Stale
	for _, c := range p.Compartments {
		if problem := staleness(c); problem != "" {
			out = append(out, Stale{Compartment: c.Name, Pos: c.Pos, Problem: problem})
		}
	}
	return out
}

// staleness says what is wrong with the file c names, "" for nothing.
func staleness(c policy.Compartment) string {
	if c.Path == "" {
		return ""
	}
	id, err := attribute.FileBuildID(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("no file at %s: the compartment matches nothing", c.Path)
	case err != nil:
		return fmt.Sprintf("%s: %v: the compartment matches nothing", c.Path, err)
	case c.BuildID != "" && !strings.EqualFold(id, c.BuildID):
		return fmt.Sprintf("%s is another build (build-id %s, the policy's %s): the compartment matches nothing; record the program again", c.Path, orNone(id), c.BuildID)
	}
	return ""
}

// StaleVDSO says which functions p assumes the vDSO exports
// (policy.Policy.VDSO) this kernel's vDSO lacks, "" for none: where it
// lacks one, glibc makes the system call it falls back to, which the
// inference left out of the policy.
func StaleVDSO(p *policy.Policy) string {
	if len(p.VDSO) == 0 {
		return ""
	}
	have, err := attribute.VDSOFunctions()
	if err != nil {
		return fmt.Sprintf("%s: vdso: %v: the functions the policy assumes it exports are not known to be there", p.Source, err)
	}
	return vdsoProblem(p.Source, p.VDSO, have)
}

// vdsoProblem says which of the functions a policy assumes the vDSO
// exports are not among have, sorted, "" for none.
func vdsoProblem(source string, assumed, have []string) string {
	var missing []string
	for _, name := range assumed {
		if !slices.Contains(have, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	return fmt.Sprintf("%s: this kernel's vDSO lacks %s, which the policy assumes it exports (vdso): glibc makes the system calls it falls back to instead, which the policy may deny; infer the program again on this machine",
		source, strings.Join(slices.Compact(missing), ", "))
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}
