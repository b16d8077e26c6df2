package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/syscalls"
)

// ociArches maps syscell's ABIs to the runtime-spec's names.
var ociArches = [...]specs.Arch{
	syscalls.X86_64: specs.ArchX86_64,
	syscalls.I386:   specs.ArchX86,
	syscalls.X32:    specs.ArchX32,
}

// OCI exports p as a runtime-spec seccomp profile, which ParseOCI reads back
// to a policy that decides every call the same way. Syscalls are grouped as
// WriteTOML groups them; architectures are p.Arches, or x86_64 when empty.
//
// What the format cannot say is left out: compartments, since a profile
// cannot tell which library makes a call (the rules, which must allow the
// union of the compartments, are the boundary an OCI runtime enforces); and
// BadArch, for which runtimes use libseccomp's own action.
//
// It fails where a runtime would read the profile differently: a policy
// that covers x86 or x32 but not x86_64 (libseccomp always covers it), a
// rule that compares one argument twice (runc OR-s such comparisons), and a
// rule with the default action on a syscall that other rules also name
// (runc skips it). Other rules with the default action change nothing and
// are dropped.
func (p *Policy) OCI() (*specs.LinuxSeccomp, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("export OCI profile: %w", err)
	}
	if len(p.Arches) > 0 && !slices.Contains(p.Arches, syscalls.X86_64) {
		return nil, errorAt(Pos{File: p.Source}, "cannot export: the policy does not cover x86_64, which libseccomp always covers on an x86_64 host")
	}
	s := &specs.LinuxSeccomp{Architectures: ociArchList(p.Arches)}
	s.DefaultAction, s.DefaultErrnoRet = p.Default.oci()
	groups := p.groups()
	overridden := p.overridden(groups)
	for _, g := range groups {
		if g.action == p.Default {
			if name := firstIn(g.names, overridden); name != "" {
				return nil, errorAt(g.pos, "cannot export: runc skips rules with the default action, but other rules name %q too", name)
			}
			continue
		}
		sc, err := g.oci()
		if err != nil {
			return nil, errorAt(g.pos, "cannot export: %v", err)
		}
		s.Syscalls = append(s.Syscalls, sc)
	}
	return s, nil
}

// ociArchList names arches in the order of syscalls.Arches, once each;
// libseccomp's native x86_64 when there are none.
func ociArchList(arches []syscalls.Arch) []specs.Arch {
	if len(arches) == 0 {
		return []specs.Arch{specs.ArchX86_64}
	}
	var list []specs.Arch
	for _, a := range syscalls.Arches {
		if slices.Contains(arches, a) {
			list = append(list, ociArches[a])
		}
	}
	return list
}

// overridden lists the syscalls some rule gives an action other than the
// default.
func (p *Policy) overridden(groups []ruleGroup) map[string]bool {
	names := map[string]bool{}
	for _, g := range groups {
		if g.action != p.Default {
			for _, name := range g.names {
				names[name] = true
			}
		}
	}
	return names
}

func firstIn(names []string, set map[string]bool) string {
	for _, name := range names {
		if set[name] {
			return name
		}
	}
	return ""
}

func (g ruleGroup) oci() (specs.LinuxSyscall, error) {
	sc := specs.LinuxSyscall{Names: g.names}
	sc.Action, sc.ErrnoRet = g.action.oci()
	var seen [MaxArgs]bool
	for _, c := range g.conds {
		if seen[c.Arg] {
			return sc, fmt.Errorf("arg%d is compared twice, which runc reads as OR", c.Arg)
		}
		seen[c.Arg] = true
		sc.Args = append(sc.Args, c.oci())
	}
	return sc, nil
}

func (a Action) oci() (specs.LinuxSeccompAction, *uint) {
	if a.Kind != Errno && a.Kind != Trace {
		return ociActions[a.Kind], nil
	}
	ret := uint(a.Data)
	return ociActions[a.Kind], &ret
}

func (c Cond) oci() specs.LinuxSeccompArg {
	a := specs.LinuxSeccompArg{Index: uint(c.Arg), Op: ociOps[c.Op], Value: c.Value}
	if c.Op == MaskedEq {
		a.Value, a.ValueTwo = c.Mask, c.Value
	}
	return a
}

// WriteOCI writes p's OCI profile as indented JSON; the output depends only
// on what p means.
func (p *Policy) WriteOCI(w io.Writer) error {
	s, err := p.OCI()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return fmt.Errorf("export OCI profile: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write OCI profile: %w", err)
	}
	return nil
}
