// Package ldso finds the objects a program loads as glibc's dynamic
// loader does: the executable, the libraries LD_PRELOAD names, then the
// DT_NEEDED closure breadth-first, each name looked up in the DT_RPATH
// of the object that needs it and of the executable (unless the object
// has a DT_RUNPATH), LD_LIBRARY_PATH, its own DT_RUNPATH, the loader's
// cache, then the system directories, with $ORIGIN, $LIB and $PLATFORM
// expanded and glibc-hwcaps subdirectories searched first. An object
// already loaded under a soname is not loaded again, and a file of
// another machine is skipped, as the loader skips it.
package ldso

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/syscell/syscell/infer/image"
)

// Search is how names are looked up.
type Search struct {
	// LibraryPath is LD_LIBRARY_PATH's directories.
	LibraryPath []string
	// Preload are LD_PRELOAD's names.
	Preload []string
	// Cache is the loader's cache; nil skips it.
	Cache *Cache
	// System are the loader's default directories.
	System []string
	// HWCaps are the glibc-hwcaps subdirectories to try first in each
	// directory, best first.
	HWCaps []string
}

// Debian's x86-64 loader: its default directories and the hwcaps levels
// an x86-64 processor may support (a missing subdirectory costs
// nothing).
var (
	systemDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"}
	hwcaps     = []string{"x86-64-v4", "x86-64-v3", "x86-64-v2"}
)

// FromEnv is the search the loader makes for a program run with env:
// LD_LIBRARY_PATH and LD_PRELOAD from env, the cache at cachePath.
func FromEnv(env []string, cachePath string) (*Search, error) {
	c, err := LoadCache(cachePath)
	if err != nil {
		return nil, err
	}
	s := &Search{Cache: c, System: systemDirs, HWCaps: hwcaps}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			s.LibraryPath = splitPath(v, ":;")
		}
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			s.Preload = splitPath(v, ": ")
		}
	}
	return s, nil
}

func splitPath(v, seps string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(seps, r) })
}

// Object is an object the program loads.
type Object struct {
	// Path is the file, with symbolic links resolved, as the kernel
	// names a mapped file.
	Path  string
	Image *image.Dynamic
	// Interp says it is the executable's program interpreter: the
	// dynamic loader.
	Interp bool
	// Dlopened says only dlopen loads it, not the executable's closure.
	Dlopened bool
}

// ErrNotFound reports a library the loader would not find.
var ErrNotFound = errors.New("not found")

// Load finds the objects a run of the executable at exe loads: the
// executable, the preloaded libraries, its DT_NEEDED closure, the
// program interpreter, and the libraries dlopen names with their
// closures, in the loader's order.
func (s *Search) Load(exe string, dlopen []string) ([]*Object, error) {
	l := &loader{s: s, bySoname: map[string]*Object{}, byPath: map[string]*Object{}}
	main, err := l.open(exe)
	if err != nil {
		return nil, err
	}
	l.exe = main
	queue := []*Object{main}
	for _, name := range s.Preload {
		o, err := l.need(name, main, true)
		if err != nil {
			return nil, fmt.Errorf("LD_PRELOAD %s: %w", name, err)
		}
		queue = appendNew(queue, o)
	}
	if err := l.closure(&queue); err != nil {
		return nil, err
	}
	if interp := main.Image.Interp; interp != "" {
		o, err := l.open(interp)
		if err != nil {
			return nil, fmt.Errorf("%s: program interpreter: %w", exe, err)
		}
		o.Interp = true
		queue = appendNew(queue, o)
	}
	loaded := len(queue)
	for _, name := range dlopen {
		o, err := l.need(name, main, true)
		if err != nil {
			return nil, fmt.Errorf("--dlopen %s: %w", name, err)
		}
		queue = appendNew(queue, o)
		if err := l.closure(&queue); err != nil {
			return nil, err
		}
	}
	for _, o := range queue[loaded:] {
		o.Dlopened = true
	}
	return queue, nil
}

func appendNew(queue []*Object, o *Object) []*Object {
	for _, q := range queue {
		if q == o {
			return queue
		}
	}
	return append(queue, o)
}

// loader is the state of one Load.
type loader struct {
	s        *Search
	exe      *Object
	bySoname map[string]*Object
	byPath   map[string]*Object
}

// closure appends to queue, breadth-first, what the objects in it need.
func (l *loader) closure(queue *[]*Object) error {
	for i := 0; i < len(*queue); i++ {
		o := (*queue)[i]
		for _, name := range o.Image.Needed {
			dep, err := l.need(name, o, false)
			if err != nil {
				return fmt.Errorf("%s needs %s: %w", o.Path, name, err)
			}
			*queue = appendNew(*queue, dep)
		}
	}
	return nil
}

// open reads the object at path, once per file.
func (l *loader) open(path string) (*Object, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if o, ok := l.byPath[real]; ok {
		return o, nil
	}
	img, err := image.OpenDynamic(real)
	if err != nil {
		return nil, err
	}
	o := &Object{Path: real, Image: img}
	l.byPath[real] = o
	if img.Soname != "" {
		if _, ok := l.bySoname[img.Soname]; !ok {
			l.bySoname[img.Soname] = o
		}
	}
	return o, nil
}

// need finds the library name that object by needs.
func (l *loader) need(name string, by *Object, noRPath bool) (*Object, error) {
	if o, ok := l.bySoname[name]; ok {
		return o, nil
	}
	if strings.Contains(name, "/") {
		return l.open(name)
	}
	for _, dir := range l.dirs(by, noRPath) {
		if o, err := l.tryDir(dir, name); err == nil {
			return o, nil
		}
	}
	if l.s.Cache != nil {
		if p, ok := l.s.Cache.Lookup(name); ok {
			if o, err := l.open(p); err == nil {
				return o, nil
			}
		}
	}
	for _, dir := range l.s.System {
		if o, err := l.tryDir(dir, name); err == nil {
			return o, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
}

// dirs are the directories searched before the cache for a name object
// by needs: DT_RPATH (by's, then the executable's) unless by has a
// DT_RUNPATH, LD_LIBRARY_PATH, then by's DT_RUNPATH.
func (l *loader) dirs(by *Object, noRPath bool) []string {
	var dirs []string
	if len(by.Image.RunPath) == 0 && !noRPath {
		dirs = append(dirs, expand(by, by.Image.RPath)...)
		if by != l.exe && len(l.exe.Image.RunPath) == 0 {
			dirs = append(dirs, expand(l.exe, l.exe.Image.RPath)...)
		}
	}
	dirs = append(dirs, l.s.LibraryPath...)
	return append(dirs, expand(by, by.Image.RunPath)...)
}

// tryDir looks for name in dir and its glibc-hwcaps subdirectories.
func (l *loader) tryDir(dir, name string) (*Object, error) {
	var errs []error
	for _, sub := range append(hwcapDirs(dir, l.s.HWCaps), dir) {
		p := filepath.Join(sub, name)
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
			continue
		}
		o, err := l.open(p)
		if err == nil {
			return o, nil
		}
		// A file of another machine: the loader goes on searching.
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func hwcapDirs(dir string, levels []string) []string {
	out := make([]string, len(levels))
	for i, lv := range levels {
		out[i] = filepath.Join(dir, "glibc-hwcaps", lv)
	}
	return out
}

// expand splits DT_RPATH or DT_RUNPATH entries into directories, with
// $ORIGIN (the directory of the object that holds them), $LIB and
// $PLATFORM replaced as Debian's x86-64 loader replaces them.
func expand(o *Object, entries []string) []string {
	var out []string
	for _, e := range entries {
		for _, dir := range strings.Split(e, ":") {
			if dir == "" {
				continue
			}
			for _, v := range []struct{ name, value string }{
				{"ORIGIN", filepath.Dir(o.Path)}, {"LIB", "lib/x86_64-linux-gnu"}, {"PLATFORM", "x86_64"},
			} {
				dir = strings.ReplaceAll(dir, "${"+v.name+"}", v.value)
				dir = strings.ReplaceAll(dir, "$"+v.name, v.value)
			}
			out = append(out, dir)
		}
	}
	return out
}
