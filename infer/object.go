package infer

import (
	"debug/elf"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/x86"
)

// Object is what the analysis knows of one ELF object, independent of
// the process it is loaded in: what is cached by build-id.
type Object struct {
	Path    string
	BuildID string
	Soname  string
	// Exec says the object is an executable; Entry is then its entry
	// point.
	Exec  bool
	Entry uint64
	// Absolute says its code is position-dependent (ET_EXEC): it may
	// take addresses as immediates.
	Absolute bool
	// BindNow says its symbols are bound at start: its PLT never calls
	// the loader's lazy-binding resolver.
	BindNow bool
	// InitFini are the functions DT_INIT and DT_FINI name.
	InitFini []uint64
	// Exports are the functions it defines for others, by name.
	Exports map[string][]image.Export
	// Data are the addresses of the data objects it exports, by name.
	Data map[string]uint64
	// Words are its relocated data words.
	Words map[uint64]image.Word
	// Sections are its sections of data.
	Sections []image.Section
	// ReadOnly are the ranges of data that is read-only once relocated
	// (PT_GNU_RELRO): a word there keeps the address it was given.
	ReadOnly []image.Range
	// Functions are the analysed functions, by entry address.
	Functions map[uint64]*x86.Function
	// Looked are the names its calls of dlsym look up, where the name is
	// a constant string. LookedAny says some call's name is computed at
	// run time: the analysis takes it to name no function of the
	// runtime (it loads a plugin's).
	Looked    []string
	LookedAny bool
	// LookupAt names what the call of dlsym at each address looks up:
	// what the pointer it returns is ("" for a computed name).
	LookupAt map[uint64]string
	// Strings are the names its code and data point to: the C strings,
	// made of the characters of C names, at the addresses of data its
	// code takes (LEA) or its relocated words hold. A lookup by a
	// constant name gets one of them: the loader's own lookups of libc's
	// functions. A name a function's code gives only to calls whose
	// results it stores (NameArgs, Stores) is not one of them: the word
	// it stores to tells where that function goes.
	Strings []string
	// NameArgs are the names calls are given: at each call's address,
	// the C name its one argument that points to one is. What the
	// loader computes from what such a call returned is the function of
	// that name; an IFUNC resolver that computes what it returns may
	// return the functions of the names it gives its calls.
	NameArgs map[uint64]string
	// Choices are what each IFUNC resolver that computes what it returns
	// picks, path by path (x86.Code.Choices), by resolver: which of its
	// picks the machine's vDSO leaves unreachable (link.go, resolved).
	Choices map[uint64][]x86.Choice
}

// lookups are the functions that look a symbol up by name, with the
// argument that names it.
var lookups = map[string]int{"dlsym": 1, "dlvsym": 1, "__libc_dlsym": 1, "__libc_dlvsym": 1}

// Analyse reads every function of an object: each start the image
// lists, and each address its code or data leads to (call and jump
// targets, addresses taken, relocated words, IFUNC resolvers), each from
// its entry to the end of its FDE. An address taken that is not an
// instruction of the FDE it lies in is data (a table in the text, as
// OpenSSL's assembly keeps them) and is left alone.
func Analyse(img *image.Image) *Object {
	obj := &Object{
		Path: img.Path, BuildID: img.BuildID, Soname: img.Soname, Exec: img.Interp != "",
		Entry: img.Entry, Absolute: img.Type == elf.ET_EXEC, BindNow: img.BindNow, InitFini: img.InitFini, Exports: img.Exports, Data: img.Data, Words: img.Words,
		ReadOnly: img.ReadOnly, Sections: img.Sections, Functions: map[uint64]*x86.Function{},
	}
	a := analysis{img: img, obj: obj}
	for _, fn := range img.Functions {
		a.add(fn.Start)
	}
	a.add(img.Entry)
	for _, addr := range img.InitFini {
		a.add(addr)
	}
	for _, addr := range sortedWords(img.Words) {
		switch w := img.Words[addr]; {
		case w.Kind == image.Symbol:
		case w.Raw:
			a.addNumber(w.Addr)
		default:
			a.add(w.Addr)
		}
	}
	a.env = x86.Env{IsCode: img.IsCode, NoReturn: func(addr uint64) bool { return a.noReturn[addr] }, Absolute: img.Type == elf.ET_EXEC, Word: img.Word}
	a.drain()
	a.findNoReturn()
	a.findLookups()
	a.findNameArgs()
	a.findNames()
	a.findChoices()
	return obj
}

// findChoices follows apart the paths of the IFUNC resolvers whose
// results the analysis of their function joined into a value it does
// not know: what they return, and on what condition.
func (a *analysis) findChoices() {
	for _, addr := range a.resolvers() {
		fn := a.obj.Functions[addr]
		if fn == nil || !slices.ContainsFunc(fn.Results, func(v x86.Value) bool { return v.Kind != x86.Const }) {
			continue
		}
		if choices, ok := a.job(addr).code.Choices(addr, &a.env); ok {
			if a.obj.Choices == nil {
				a.obj.Choices = map[uint64][]x86.Choice{}
			}
			a.obj.Choices[addr] = choices
		}
	}
	a.codes = nil
}

// resolvers are the IFUNC resolvers of the object's exports and of its
// IRELATIVE relocations, sorted.
func (a *analysis) resolvers() []uint64 {
	var out []uint64
	for _, es := range a.obj.Exports {
		for _, e := range es {
			if e.IFunc {
				out = append(out, e.Addr)
			}
		}
	}
	for _, w := range a.obj.Words {
		if w.Kind == image.Resolved {
			out = append(out, w.Addr)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// findNames finds the names the object's code and data point to, but
// those a function gives only to calls whose results it stores.
func (a *analysis) findNames() {
	names := map[string]bool{}
	add := func(addr uint64, stored map[string]bool) {
		if s, ok := a.img.CString(addr); ok && isName(s) && !stored[s] {
			names[s] = true
		}
	}
	for _, fn := range a.obj.Functions {
		stored := a.obj.storedNames(fn)
		for _, addr := range fn.Data {
			add(addr, stored)
		}
	}
	for _, w := range a.obj.Words {
		if w.Kind == image.Local && !a.img.IsCode(w.Addr) {
			add(w.Addr, nil)
		}
	}
	a.obj.Strings = sortedKeys(names)
}

// findNameArgs finds the calls given one pointer to a C name.
func (a *analysis) findNameArgs() {
	for _, addr := range sortedKeys(a.obj.Functions) {
		for _, c := range a.obj.Functions[addr].Calls {
			name := ""
			for _, arg := range c.Args {
				s, ok := a.constString(arg)
				if !ok || !isName(s) {
					continue
				}
				if name != "" {
					name = ""
					break
				}
				name = s
			}
			if name == "" {
				continue
			}
			if a.obj.NameArgs == nil {
				a.obj.NameArgs = map[uint64]string{}
			}
			a.obj.NameArgs[c.Addr] = name
		}
	}
}

// storedNames are the names function fn gives only to calls whose
// results, or addresses made from them, it stores to words of its
// object's data by address (RIP-relative), where the linker finds them.
func (o *Object) storedNames(fn *x86.Function) map[string]bool {
	stored := map[uint64]bool{}
	for _, st := range fn.Stores {
		if at, ok := st.Value.Origin(); ok && st.Dest.Kind == x86.Slot {
			stored[at] = true
		}
	}
	out := map[string]bool{}
	for _, c := range fn.Calls {
		name, ok := o.NameArgs[c.Addr]
		if !ok {
			continue
		}
		if all, seen := out[name]; seen {
			out[name] = all && stored[c.Addr]
		} else {
			out[name] = stored[c.Addr]
		}
	}
	return out
}

// foundName is the name of the function v is, where v was made from what
// a call given a name returned.
func (o *Object) foundName(v x86.Value) (string, bool) {
	at, ok := v.Origin()
	if !ok {
		return "", false
	}
	name, ok := o.NameArgs[at]
	return name, ok
}

// isName says whether s could name a symbol: letters, digits and '_'.
func isName(s string) bool {
	for _, c := range []byte(s) {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// findLookups finds the names the object's calls of dlsym look up: of
// the dlsym it imports, or of its own (libc's __libc_dlsym).
func (a *analysis) findLookups() {
	names := map[string]bool{}
	own := map[uint64]string{}
	for name := range lookups {
		for _, e := range a.obj.Exports[name] {
			own[e.Addr] = name
		}
	}
	for _, addr := range sortedKeys(a.obj.Functions) {
		fn := a.obj.Functions[addr]
		if _, ok := thunk(fn); ok {
			// A PLT entry: its callers' calls are the lookups.
			continue
		}
		for _, c := range fn.Calls {
			arg, ok := lookups[a.obj.calledName(&c, own)]
			if !ok {
				continue
			}
			name, ok := a.constString(c.Args[arg])
			if a.obj.LookupAt == nil {
				a.obj.LookupAt = map[uint64]string{}
			}
			a.obj.LookupAt[c.Addr] = name
			if !ok {
				a.obj.LookedAny = true
				continue
			}
			names[name] = true
		}
	}
	a.obj.Looked = sortedKeys(names)
}

// constString is the string a pointer that is one constant points to.
func (a *analysis) constString(v x86.Value) (string, bool) {
	if v.Kind != x86.Const || len(v.Consts) != 1 {
		return "", false
	}
	return a.img.CString(v.Consts[0])
}

// calledName is the name of the function a call of o reaches: an
// import, through a GOT slot or a PLT entry, or one of own, o's exports
// by address.
func (o *Object) calledName(c *x86.Call, own map[uint64]string) string {
	if name := o.importCalled(c); name != "" {
		return name
	}
	if c.Direct {
		return own[c.Target]
	}
	return ""
}

// importCalled is the name of the symbol a call of o reaches through a
// GOT slot, directly or through a PLT entry, or "".
func (o *Object) importCalled(c *x86.Call) string {
	slot := uint64(0)
	switch {
	case c.Direct:
		fn := o.Functions[c.Target]
		if fn == nil {
			return ""
		}
		s, ok := thunk(fn)
		if !ok {
			return ""
		}
		slot = s
	case c.Ptr.Kind == x86.Slot:
		slot = c.Ptr.Consts[0]
	default:
		return ""
	}
	if w, ok := o.Words[slot]; ok && w.Kind == image.Symbol {
		return w.Name
	}
	return ""
}

// drain reads the queued functions and what they lead to, in rounds, so
// that the code of an FDE is decoded once for all the entries a round
// finds in it.
func (a *analysis) drain() {
	for len(a.work) > 0 {
		batch := a.work
		a.work = nil
		a.codes = map[uint64]*x86.Code{}
		slices.Sort(batch)
		jobs := make([]readJob, len(batch))
		for i, addr := range batch {
			jobs[i] = a.job(addr)
		}
		fns := make([]*x86.Function, len(batch))
		parallel(len(jobs), func(i int) {
			fns[i] = jobs[i].code.Read(batch[i], &a.env, jobs[i].orphans)
		})
		for i, addr := range batch {
			a.obj.Functions[addr] = fns[i]
			a.follow(fns[i])
		}
	}
	a.codes = nil
}

// parallel calls f(0) to f(n-1), on every processor.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// readJob is how to read the function at an address: in which decoded
// code, with landing pads or not.
type readJob struct {
	code    *x86.Code
	orphans bool
}

// findNoReturn finds the functions that never return (exit, abort, and
// those that end in them) and reads again the functions that call them,
// whose code after such a call is not reached from it, until no more
// are found. A function is taken to return until its analysis, knowing
// which of its callees do not, finds no way back to its caller.
func (a *analysis) findNoReturn() {
	a.noReturn = map[uint64]bool{}
	for {
		var found []uint64
		for addr, fn := range a.obj.Functions {
			if !fn.Returns && !a.noReturn[addr] {
				found = append(found, addr)
			}
		}
		if len(found) == 0 {
			return
		}
		for _, addr := range found {
			a.noReturn[addr] = true
		}
		for _, addr := range a.callersOf(found) {
			a.obj.Functions[addr] = nil
			a.work = append(a.work, addr)
		}
		a.drain()
	}
}

// callersOf lists the functions with a direct call or jump to any of
// targets.
func (a *analysis) callersOf(targets []uint64) []uint64 {
	want := map[uint64]bool{}
	for _, t := range targets {
		want[t] = true
	}
	var out []uint64
	for addr, fn := range a.obj.Functions {
		for _, c := range fn.Calls {
			if c.Direct && want[c.Target] {
				out = append(out, addr)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// analysis is the state of Analyse.
type analysis struct {
	img  *image.Image
	obj  *Object
	work []uint64
	// codes are the decoded code of the FDEs of this round, by start.
	codes map[uint64]*x86.Code
	env   x86.Env
	// noReturn are the functions found never to return.
	noReturn map[uint64]bool
}

// add queues the function entered at addr.
func (a *analysis) add(addr uint64) {
	if _, ok := a.obj.Functions[addr]; !ok && a.img.IsCode(addr) {
		a.obj.Functions[addr] = nil
		a.work = append(a.work, addr)
	}
}

// addNumber queues the function at an address an immediate may name:
// the start of an FDE, or one of its instructions, or code no FDE
// covers. Any other place in an FDE makes it a number that happens to
// fall in the code.
func (a *analysis) addNumber(addr uint64) {
	if fde, ok := a.img.Frame(addr); ok && !a.code(fde.Start).IsStart(addr) {
		return
	}
	a.add(addr)
}

// code is the decoded code from start to the end of its FDE, or of the
// code that follows it.
func (a *analysis) code(start uint64) *x86.Code {
	if c, ok := a.codes[start]; ok {
		return c
	}
	if a.codes == nil {
		a.codes = map[uint64]*x86.Code{}
	}
	bytes, _ := a.img.CodeAt(start)
	c := x86.Decode(bytes[:a.img.Extent(start)-start], start)
	a.codes[start] = c
	return c
}

// job says how to read the function at addr: in the code of its FDE,
// which, if it has an LSDA and starts there, is read with its landing
// pads.
func (a *analysis) job(addr uint64) readJob {
	fde, inFrame := a.img.Frame(addr)
	var code *x86.Code
	if inFrame {
		code = a.code(fde.Start)
	}
	if code == nil || !code.IsStart(addr) {
		// Code no FDE covers, or a jump or call into the middle of an
		// instruction.
		code = a.code(addr)
	}
	return readJob{code: code, orphans: inFrame && fde.Start == addr && fde.LSDA}
}

// follow queues the functions a function leads to.
func (a *analysis) follow(fn *x86.Function) {
	for _, c := range fn.Calls {
		if c.Direct {
			a.add(c.Target)
		}
		if c.Ptr.Kind == x86.Const {
			for _, t := range c.Ptr.Consts {
				a.add(t)
			}
		}
	}
	for _, r := range fn.Refs {
		a.add(r)
	}
	for _, r := range fn.Imms {
		a.addNumber(r)
	}
}

func sortedWords(words map[uint64]image.Word) []uint64 {
	addrs := make([]uint64, 0, len(words))
	for a := range words {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	return addrs
}

// readOnly says whether the word at addr cannot change once the loader
// has relocated it.
func (o *Object) readOnly(addr uint64) bool {
	i := sort.Search(len(o.ReadOnly), func(i int) bool { return o.ReadOnly[i].End > addr })
	return i < len(o.ReadOnly) && o.ReadOnly[i].Start <= addr
}
