// Package infer bounds, with no run of a program, the system calls each
// object it loads can make: the static counterpart of syscell record,
// with the same compartments and the same attribution rule, so that a
// recorded policy and an inferred one compare compartment by
// compartment.
//
// The loader's search (package ldso) lists the objects a run loads; each
// is read (package image) and its functions analysed (package x86):
// every syscall instruction with what its number can be, every call with
// what its target and arguments can be. Link resolves the calls across
// objects and solves, for every function, what it can make the kernel
// do for its compartment: calls made inside the system runtime (libc,
// the loader, the vDSO) are its caller's, as attribute's rule has it;
// what a callee does only where a bit of an argument is set (a flag) is
// not its caller's where the caller passes constants without that bit.
// Indirect calls resolve through callbacks passed as arguments, GOT
// slots, read-only words and the fields of the loader's data, glibc's
// checked stdio vtables and mangled pointers; the rest reach a pool of
// the functions whose addresses are taken. ARCHITECTURE.md, Static
// inference, says where the analysis must over-approximate, and what it
// assumes.
package infer

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/ldso"
	"github.com/syscell/syscell/record"
)

// Options say how to find and analyse a program's objects.
type Options struct {
	// Dlopen names libraries the program loads with dlopen, found as its
	// DT_NEEDED ones are, with their own.
	Dlopen []string
	// Env is the program's environment: LD_LIBRARY_PATH and LD_PRELOAD.
	Env []string
	// LoaderCache is the loader's cache (/etc/ld.so.cache).
	LoaderCache string
	// Cache keeps objects' analyses by build-id; nil analyses all.
	Cache *Cache
	// Runtime names the system runtime's libraries.
	Runtime attribute.Runtime
	// Progress, if not nil, gets a line per object analysed.
	Progress io.Writer
}

// Result is what a program's objects can do.
type Result struct {
	// Compartments are the objects outside the runtime that can make
	// calls, with their calls, by path.
	Compartments []Compartment
	// Runtime are the calls the runtime makes with no caller outside it.
	Runtime Calls
	// StartUp are the loader's, starting the program.
	StartUp Calls
	// VDSO names the functions of this machine's vDSO whose presence
	// left an IFUNC resolver's system-call fallback out, sorted: what
	// the result assumes of the kernel (policy.Policy.VDSO).
	VDSO  []string
	Stats Stats
	// Cached counts the objects whose analysis came from the cache.
	Cached int
	// Elapsed is how long the inference took.
	Elapsed time.Duration
}

// Compartment is one object's inferred calls.
type Compartment struct {
	Path, BuildID string
	Calls         Calls
	// Ending are the calls of the paths that end the program: what its
	// calls of the runtime's functions that never return (exit, abort,
	// assertion failures, err) can make.
	Ending Calls
}

// Infer infers the calls of the program at exe and of every object it
// loads.
func Infer(exe string, opt Options) (*Result, error) {
	start := time.Now()
	p, objs, err := link(exe, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Runtime: p.Runtime(), StartUp: p.StartUp(), VDSO: p.VDSO(), Stats: p.Stats, Cached: p.cached}
	for i, o := range objs {
		if p.s.runtime[i] {
			continue
		}
		res.Compartments = append(res.Compartments, Compartment{Path: o.Path, BuildID: o.BuildID, Calls: p.Object(i), Ending: p.Ending(i)})
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// link finds, analyses (or takes from the cache), links and solves the
// objects of the program at exe, the vDSO last.
func link(exe string, opt Options) (*Program, []*Object, error) {
	search, err := ldso.FromEnv(opt.Env, opt.LoaderCache)
	if err != nil {
		return nil, nil, err
	}
	found, err := search.Load(exe, opt.Dlopen)
	if err != nil {
		return nil, nil, err
	}
	loader := ""
	dlopened := map[string]bool{}
	for _, f := range found {
		if f.Interp {
			loader = f.Path
		}
		dlopened[f.Path] = f.Dlopened
	}
	objs, cached, err := opt.objects(found)
	if err != nil {
		return nil, nil, err
	}
	vdso, hit, err := opt.vdso()
	if err != nil {
		return nil, nil, err
	}
	if hit {
		cached++
	}
	objs = append(objs, vdso)
	rt := opt.Runtime
	// The loader's search lists the program first.
	program := objs[0]
	p := Link(objs, Kind{
		Runtime:  func(o *Object) bool { return o == vdso || rt.Contains(o.Soname) },
		VDSO:     func(o *Object) bool { return o == vdso },
		Loader:   func(o *Object) bool { return o.Path == loader },
		Program:  func(o *Object) bool { return o == program },
		Dlopened: func(o *Object) bool { return dlopened[o.Path] },
	})
	p.cached = cached
	return p, objs, nil
}

// objects analyses the objects, or takes their analyses from the cache,
// one per processor at a time.
func (opt *Options) objects(found []*ldso.Object) ([]*Object, int, error) {
	objs := make([]*Object, len(found))
	hits := make([]bool, len(found))
	errs := make([]error, len(found))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				objs[i], hits[i], errs[i] = opt.object(found[i].Path, found[i].Image.BuildID)
			}
		}()
	}
	for i := range found {
		next <- i
	}
	close(next)
	wg.Wait()
	cached := 0
	for i := range found {
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		if hits[i] {
			cached++
		}
	}
	return objs, cached, nil
}

// progressMu orders the progress lines of objects analysed at once.
var progressMu sync.Mutex

// object analyses the object at path, or takes its analysis from the
// cache.
func (opt *Options) object(path, buildID string) (*Object, bool, error) {
	if o, ok := opt.Cache.get(buildID); ok {
		o.Path = path
		return o, true, nil
	}
	img, err := image.Open(path)
	if err != nil {
		return nil, false, err
	}
	if opt.Progress != nil {
		progressMu.Lock()
		fmt.Fprintf(opt.Progress, "syscell: analysing %s\n", path)
		progressMu.Unlock()
	}
	o := Analyse(img)
	return o, false, opt.Cache.put(o)
}

// vdso analyses the vDSO, the one this kernel maps into every process.
func (opt *Options) vdso() (*Object, bool, error) {
	data, err := attribute.VDSOImage()
	if err != nil {
		return nil, false, err
	}
	img, err := image.Read(VDSOName, bytes.NewReader(data))
	if err != nil {
		return nil, false, err
	}
	if o, ok := opt.Cache.get(img.BuildID); ok {
		o.Path = VDSOName
		return o, true, nil
	}
	o := Analyse(img)
	return o, false, opt.Cache.put(o)
}

// VDSOName names the vDSO, as record names it.
const VDSOName = "[vdso]"

// Recording is the result in the form syscell record writes: a
// compartment per object, [runtime], the loader's start-up calls in the
// rules only. The signal machinery's calls (rt_sigreturn, after a
// handler, and restart_syscall, resuming an interrupted sleep) are made
// for whatever code a signal interrupted: every compartment gets them,
// rt_sigreturn where the program can install a handler at all.
func (r *Result) Recording() *record.Recording {
	rec := &record.Recording{StartUp: map[string]uint64{}, VDSO: slices.Clone(r.VDSO)}
	union := map[string]bool{}
	add := func(name, path, buildID string, calls Calls) {
		c := &record.Compartment{Name: name, Path: path, BuildID: buildID, Calls: map[string]uint64{}, Reach: map[string]bool{}}
		for _, n := range calls.Names() {
			c.Calls[n] = 0
			c.Reach[n] = true
			union[n] = true
		}
		rec.Compartments = append(rec.Compartments, c)
	}
	for _, c := range r.Compartments {
		add(c.Path, c.Path, c.BuildID, c.Calls)
	}
	add(record.RuntimeName, "", "", r.Runtime)
	for _, n := range r.StartUp.Names() {
		rec.StartUp[n] = 0
	}
	rec.Compartments = slices.DeleteFunc(rec.Compartments, func(c *record.Compartment) bool { return len(c.Calls) == 0 })
	machinery := []string{"restart_syscall"}
	if union["rt_sigaction"] {
		machinery = append(machinery, "rt_sigreturn")
	}
	for _, c := range rec.Compartments {
		for _, n := range machinery {
			c.Calls[n] = 0
			c.Reach[n] = true
		}
	}
	slices.SortFunc(rec.Compartments, func(a, b *record.Compartment) int { return strings.Compare(a.Name, b.Name) })
	return rec
}

// ErrNotFound reports a library the loader would not find.
var ErrNotFound = ldso.ErrNotFound

// RuntimeMap is the map from each function of the system runtime that
// libc exports to the calls a call of it can make for its caller, in the
// context of the program at exe (its objects may take the addresses of
// libc's functions, which its indirect calls may then reach).
func RuntimeMap(exe string, opt Options) ([]Entry, error) {
	p, objs, err := link(exe, opt)
	if err != nil {
		return nil, err
	}
	for i, o := range objs {
		if _, ok := o.Exports["__libc_start_main"]; ok && p.s.runtime[i] {
			return p.Map(i), nil
		}
	}
	return nil, fmt.Errorf("%s loads no libc", exe)
}
