package policy

import (
	"cmp"
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/syscalls"
)

// ociActions maps syscell's action kinds to the runtime-spec's names.
var ociActions = [...]specs.LinuxSeccompAction{
	KillProcess: specs.ActKillProcess,
	KillThread:  specs.ActKillThread,
	Trap:        specs.ActTrap,
	Errno:       specs.ActErrno,
	UserNotify:  specs.ActNotify,
	Trace:       specs.ActTrace,
	Log:         specs.ActLog,
	Allow:       specs.ActAllow,
}

// ociOps maps syscell's operators to the runtime-spec's names.
var ociOps = [...]specs.LinuxSeccompOperator{
	Eq:       specs.OpEqualTo,
	Ne:       specs.OpNotEqual,
	Lt:       specs.OpLessThan,
	Le:       specs.OpLessEqual,
	Gt:       specs.OpGreaterThan,
	Ge:       specs.OpGreaterEqual,
	MaskedEq: specs.OpMaskedEqual,
}

// ParseOCI imports a seccomp profile in the runtime-spec's format, or in
// Docker's extension of it (archMap, includes, excludes), resolving it as
// Docker and runc would for a container with opt's capabilities on an
// x86_64 host with opt's kernel. name stands for the file in positions;
// errors in the file are *Error.
//
// What the import leaves out is returned as warnings, "file:line: ...":
// syscall names no x86 ABI knows, other architectures, flags and the
// listener, and rules whose action is the default (runc skips those).
//
// The covered ABIs are x86_64, which libseccomp always includes on an
// x86_64 host, and those of architectures or of archMap's x86_64 entry.
// Calls from other ABIs get kill-process, syscell's bad-arch default.
func ParseOCI(name string, data []byte, opt OCIOptions) (*Policy, []string, error) {
	prof, err := decodeProfile(name, data)
	if err != nil {
		return nil, nil, err
	}
	host, err := opt.host()
	if err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", name, err)
	}
	im := &ociImporter{name: name, prof: prof, host: host}
	if err := im.header(); err != nil {
		return nil, nil, err
	}
	for i := range prof.Syscalls {
		if err := im.entry(&prof.Syscalls[i], Pos{File: name, Line: prof.lines[i]}); err != nil {
			return nil, nil, err
		}
	}
	if err := im.pol.Validate(); err != nil {
		return nil, nil, err
	}
	return im.pol, im.sortedWarnings(), nil
}

// ociImporter builds a Policy from a decoded profile.
type ociImporter struct {
	name     string
	prof     *ociProfile
	host     *dockerHost
	pol      *Policy
	warnings []*Error
}

func (im *ociImporter) warn(pos Pos, format string, args ...any) {
	im.warnings = append(im.warnings, errorAt(pos, format, args...))
}

// sortedWarnings lists the warnings in the order of the lines they are about.
func (im *ociImporter) sortedWarnings() []string {
	slices.SortStableFunc(im.warnings, func(a, b *Error) int { return cmp.Compare(a.Pos.Line, b.Pos.Line) })
	ws := make([]string, len(im.warnings))
	for i, w := range im.warnings {
		ws[i] = w.Error()
	}
	return ws
}

// keyPos places a top-level key, or the start of the file if it is absent.
func (im *ociImporter) keyPos(key string) Pos {
	return Pos{File: im.name, Line: max(1, im.prof.keyLines[key])}
}

func (im *ociImporter) header() error {
	p := im.prof
	if p.DefaultAction == "" {
		return errorAt(im.keyPos("defaultAction"), "missing \"defaultAction\"")
	}
	def, err := ociAction(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return errorAt(im.keyPos("defaultAction"), "defaultAction: %v", err)
	}
	im.pol = &Policy{Default: def, BadArch: ActKillProcess, Source: im.name}
	if len(p.Flags) > 0 {
		im.warn(im.keyPos("flags"), "flags %v ignored: syscell sets its own", p.Flags)
	}
	for _, key := range []string{"listenerPath", "listenerMetadata"} {
		if _, ok := p.keyLines[key]; ok {
			im.warn(im.keyPos(key), "%s ignored: syscell has its own supervisor", key)
		}
	}
	return im.arches()
}

// arches takes the ABIs from architectures, or from archMap's entry for an
// x86_64 host; Docker refuses profiles that give both.
func (im *ociImporter) arches() error {
	p := im.prof
	if len(p.Architectures) > 0 && len(p.ArchMap) > 0 {
		return errorAt(im.keyPos("archMap"), "both architectures and archMap given; use one")
	}
	listed, key := p.Architectures, "architectures"
	if i := slices.IndexFunc(p.ArchMap, func(m ociArchMap) bool { return m.Arch == specs.ArchX86_64 }); i >= 0 {
		listed, key = append([]specs.Arch{specs.ArchX86_64}, p.ArchMap[i].SubArches...), "archMap"
	}
	arches := []syscalls.Arch{syscalls.X86_64}
	for _, name := range listed {
		a, err := syscalls.ParseArch(string(name))
		if err != nil {
			im.warn(im.keyPos(key), "architecture %s ignored: syscell covers x86_64, x86 and x32", name)
			continue
		}
		arches = append(arches, a)
	}
	slices.Sort(arches)
	im.pol.Arches = slices.Compact(arches)
	return nil
}

// entry adds the rules of one syscalls entry, if Docker keeps it.
func (im *ociImporter) entry(e *ociSyscall, pos Pos) error {
	if !im.host.keeps(e) {
		return nil
	}
	names, err := entryNames(e)
	if err != nil {
		return errorAt(pos, "%v", err)
	}
	act, err := ociAction(e.Action, e.ErrnoRet)
	if err != nil {
		return errorAt(pos, "%v", err)
	}
	if act == im.pol.Default {
		im.warn(pos, "rule for %v ignored: its action is the default, and runc skips it", names)
		return nil
	}
	conds, err := im.conds(e.Args, pos)
	if err != nil {
		return err
	}
	names = im.knownNames(names, pos)
	if len(names) == 0 {
		return nil
	}
	for _, cs := range im.splitRepeatedArgs(conds, pos) {
		im.pol.Rules = append(im.pol.Rules, Rule{Syscalls: names, Action: act, Conds: cs, Pos: pos})
	}
	return nil
}

// entryNames accepts names, or the name of older profiles, not both.
func entryNames(e *ociSyscall) ([]string, error) {
	switch {
	case e.Name != "" && len(e.Names) > 0:
		return nil, fmt.Errorf("both name and names given; use names")
	case e.Name != "":
		return []string{e.Name}, nil
	case len(e.Names) == 0:
		return nil, fmt.Errorf("no syscall names")
	}
	return e.Names, nil
}

// knownNames drops, with a warning, names no x86 ABI has: runc too skips
// names libseccomp cannot resolve.
func (im *ociImporter) knownNames(names []string, pos Pos) []string {
	var known []string
	for _, name := range names {
		if checkSyscall(name) != nil {
			im.warn(pos, "syscall %q ignored: no x86 ABI has it", name)
			continue
		}
		known = append(known, name)
	}
	return known
}

func (im *ociImporter) conds(args []specs.LinuxSeccompArg, pos Pos) ([]Cond, error) {
	var conds []Cond
	for i, a := range args {
		c, err := ociCond(a)
		if err != nil {
			return nil, errorAt(pos, "args[%d]: %v", i, err)
		}
		if c.Op != MaskedEq && a.ValueTwo != 0 {
			im.warn(pos, "args[%d]: valueTwo ignored: only %s uses it", i, specs.OpMaskedEqual)
		}
		conds = append(conds, c)
	}
	return conds, nil
}

// splitRepeatedArgs follows runc: libseccomp compares an argument at most
// once per rule, so when an entry compares one argument twice, runc adds
// each comparison as a rule of its own, and they are OR-ed, not AND-ed.
func (im *ociImporter) splitRepeatedArgs(conds []Cond, pos Pos) [][]Cond {
	var seen [MaxArgs]bool
	repeated := false
	for _, c := range conds {
		repeated = repeated || seen[c.Arg]
		seen[c.Arg] = true
	}
	if !repeated {
		return [][]Cond{conds}
	}
	im.warn(pos, "args compare one argument more than once: each holds on its own (OR), as in runc")
	split := make([][]Cond, len(conds))
	for i, c := range conds {
		split[i] = []Cond{c}
	}
	return split
}

// ociAction reads an action and its errnoRet as runc does: SCMP_ACT_KILL is
// libseccomp's SECCOMP_RET_KILL, which kills the thread; errno and trace
// default to EPERM; errnoRet on any other action is an error, as the
// runtime-spec requires.
func ociAction(a specs.LinuxSeccompAction, ret *uint) (Action, error) {
	if a == specs.ActKill {
		a = specs.ActKillThread
	}
	k := slices.Index(ociActions[:], a)
	if k < 0 {
		return Action{}, fmt.Errorf("unknown action %q", a)
	}
	kind := ActionKind(k)
	if kind != Errno && kind != Trace {
		if ret != nil {
			return Action{}, fmt.Errorf("errnoRet given for %s, which returns no errno", a)
		}
		return Action{Kind: kind}, nil
	}
	data := uint(unix.EPERM)
	if ret != nil {
		data = *ret
	}
	if data > RetDataMask {
		return Action{}, fmt.Errorf("errnoRet %d does not fit in 16 bits", data)
	}
	return Action{Kind: kind, Data: uint16(data)}, nil
}

// ociCond reads one comparison. For SCMP_CMP_MASKED_EQ, value is the mask
// and valueTwo the value the masked argument must equal, as in libseccomp's
// SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, mask, datum).
func ociCond(a specs.LinuxSeccompArg) (Cond, error) {
	if a.Index >= MaxArgs {
		return Cond{}, fmt.Errorf("index %d out of range (want 0 to %d)", a.Index, MaxArgs-1)
	}
	op := slices.Index(ociOps[:], a.Op)
	if op < 0 {
		return Cond{}, fmt.Errorf("unknown operator %q", a.Op)
	}
	c := Cond{Arg: uint8(a.Index), Op: Op(op), Value: a.Value}
	if c.Op == MaskedEq {
		c.Mask, c.Value = a.Value, a.ValueTwo
	}
	return c, c.check()
}
