package attribute

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/unwind"
)

// Kind says what an Object is.
type Kind uint8

// Kinds of executable memory.
const (
	// File is code mapped from a file: an executable or a shared library.
	File Kind = iota
	// VDSO is the kernel's virtual dynamic shared object.
	VDSO
	// AnonExec is anonymous executable memory, such as a JIT's.
	AnonExec
)

// ID identifies an object: the file's device (as stat reports it) and
// inode, and its GNU build-id in hex when it has one. Two paths to one file
// are one object; a file replaced at the same path is another.
type ID struct {
	Kind    Kind
	Dev     uint64
	Ino     uint64
	BuildID string
}

// Object is an executable mapping's code, and what the rule needs to know
// of it.
type Object struct {
	ID
	// Path names the object for humans: the file's path, "[vdso]" or
	// "[anon-exec]".
	Path string
	// Soname is the object's DT_SONAME, if any.
	Soname string
	// Runtime says the object is part of the system runtime.
	Runtime bool
	// Err is why the object's file could not be read, if it could not:
	// its build-id and soname are then unknown, and so is its CFI.
	Err error

	// elf is the open object, from which its CFI is read when an unwind
	// first needs it.
	elf *elf.File
	// loads are its PT_LOAD segments, to turn addresses into link-time
	// addresses.
	loads []segment
	// entry is the range of the function at the ELF entry point of an
	// executable or of the dynamic loader, where a thread's stack ends.
	entry [2]uint64
	// startMain is the range of libc's __libc_start_main, which the
	// entry point of every executable calls (unreadable.go).
	startMain [2]uint64
	linkCache
}

// segment is a loadable segment: its file offset, link-time address and
// size in the file.
type segment struct{ off, vaddr, filesz uint64 }

// anonExec is the one object of every anonymous executable mapping.
var anonExec = &Object{ID: ID{Kind: AnonExec}, Path: "[anon-exec]"}

// AnonExecObject returns the object of anonymous executable memory.
func AnonExecObject() *Object { return anonExec }

// String returns the object's path.
func (o *Object) String() string { return o.Path }

// linkAddr returns the link-time address of the byte at file offset off.
func (o *Object) linkAddr(off uint64) (uint64, bool) {
	for _, s := range o.loads {
		if off >= s.off && off < s.off+s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// inEntry says whether a link-time address lies in the entry function.
func (o *Object) inEntry(addr uint64) bool {
	return addr >= o.entry[0] && addr < o.entry[1]
}

// Objects loads objects and keeps one per identity, with their CFI. It is
// safe for concurrent use.
type Objects struct {
	runtime Runtime
	tables  unwind.Cache[ID]
	mu      sync.Mutex
	files   map[fileKey]*Object
	// closers are the files the objects hold open.
	closers []io.Closer
	vdso    *Object
}

// fileKey identifies a file before its build-id is known.
type fileKey struct{ dev, ino uint64 }

// NewObjects returns an empty registry that tells runtime objects by rt.
func NewObjects(rt Runtime) *Objects {
	return &Objects{runtime: rt, files: map[fileKey]*Object{}}
}

// Close closes the objects' files. Their CFI, if not read yet, can no
// longer be.
func (o *Objects) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for _, c := range o.closers {
		errs = append(errs, c.Close())
	}
	o.closers = nil
	return errors.Join(errs...)
}

// Table returns the CFI of obj, read once.
func (o *Objects) Table(obj *Object) (*unwind.Table, error) {
	if obj.Err != nil {
		return nil, obj.Err
	}
	if obj.elf == nil {
		return nil, fmt.Errorf("%s: %w", obj.Path, unwind.ErrNoCFI)
	}
	return o.tables.Get(obj.ID, func() (*unwind.Table, error) {
		t, err := unwind.Open(obj.elf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", obj.Path, err)
		}
		return t, nil
	})
}

// ErrChanged reports a path that no longer leads to the mapped file.
var ErrChanged = errors.New("the file at this path is not the mapped one")

// Known returns the object of the file with device dev and inode ino
// where File has made it already.
func (o *Objects) Known(dev, ino uint64) (*Object, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.files[fileKey{dev, ino}]
	return obj, ok
}

// File returns the object of the file with device dev and inode ino,
// reading it from the first of paths that leads to that very file (paths
// such as /proc/PID/map_files/... reach a file that was deleted or
// replaced). The name is paths[0]. An object none of the paths leads to
// is still returned, with Err set.
func (o *Objects) File(dev, ino uint64, paths ...string) *Object {
	key := fileKey{dev, ino}
	o.mu.Lock()
	defer o.mu.Unlock()
	if obj, ok := o.files[key]; ok {
		return obj
	}
	obj := &Object{ID: ID{Kind: File, Dev: dev, Ino: ino}}
	if len(paths) > 0 {
		obj.Path = paths[0]
	}
	obj.Err = o.open(obj, paths)
	if obj.Err != nil {
		obj.Runtime = o.runtime.Contains(filepath.Base(obj.Path))
	}
	o.files[key] = obj
	return obj
}

// open reads obj from the first path that leads to it, and keeps the file
// open.
func (o *Objects) open(obj *Object, paths []string) error {
	var errs []error
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := openSame(p, obj.Dev, obj.Ino)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := o.fill(obj, f); err != nil {
			f.Close()
			return err
		}
		o.closers = append(o.closers, f)
		return nil
	}
	if len(errs) == 0 {
		return fmt.Errorf("device %#x inode %d: no path to the file", obj.Dev, obj.Ino)
	}
	return errors.Join(errs...)
}

// openSame opens path if it is the file (dev, ino).
func openSame(path string, dev, ino uint64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Dev != dev || st.Ino != ino {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrChanged)
	}
	return f, nil
}

// fill reads an ELF object's identity and layout into obj.
func (o *Objects) fill(obj *Object, r io.ReaderAt) error {
	ef, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("%s: %w", obj.Path, err)
	}
	obj.elf = ef
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			obj.loads = append(obj.loads, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	obj.BuildID = buildID(ef)
	obj.Soname = soname(ef)
	obj.Runtime = obj.Kind == VDSO || o.runtime.Contains(obj.Soname)
	if obj.Kind == File && ef.Entry != 0 {
		obj.entry = o.entryRange(obj, ef.Entry)
	}
	if obj.Runtime {
		obj.startMain = symbolRange(ef, startMainSymbol)
	}
	return nil
}

// soname is f's DT_SONAME, read where it lies in .dynstr: every object of
// a process is read at its first attributed call, which waits, and
// libcrypto's .dynstr, which debug/elf's DynString reads whole, holds
// some hundred kilobytes of names.
func soname(f *elf.File) string {
	off, err := f.DynValue(elf.DT_SONAME)
	strs := f.Section(".dynstr")
	if err != nil || len(off) != 1 || strs == nil || off[0] >= strs.Size {
		return ""
	}
	buf := make([]byte, min(strs.Size-off[0], 4096))
	n, _ := strs.ReadAt(buf, int64(off[0]))
	name, _, ok := bytes.Cut(buf[:n], []byte{0})
	if !ok {
		return ""
	}
	return string(name)
}

// entryRange returns the range of the function at the entry point: the FDE
// that covers it, or, where the entry code has no CFI (the dynamic
// loader's _start), everything from the entry point up to the next FDE.
func (o *Objects) entryRange(obj *Object, entry uint64) [2]uint64 {
	t, err := o.Table(obj)
	if err != nil {
		return [2]uint64{}
	}
	if fde, err := t.Find(entry); err == nil {
		return [2]uint64{fde.Start, fde.End}
	}
	return [2]uint64{entry, t.NextStart(entry)}
}

// FileBuildID returns the GNU build-id, in hex, of the ELF file at path,
// or "" if it has none: what a recorded compartment's build-id names.
func FileBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return buildID(f), nil
}

// BuildID returns the GNU build-id of an open ELF file in hex, or "" if
// it has none.
func BuildID(f *elf.File) string { return buildID(f) }

// buildID returns the GNU build-id of an ELF file in hex, read from its
// PT_NOTE segments, or "".
func buildID(f *elf.File) string {
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := noteBuildID(data, p.Align); id != "" {
			return id
		}
	}
	return ""
}

// noteBuildID finds NT_GNU_BUILD_ID among the notes of a segment, whose
// fields are aligned to align (4, or 8 for some objects).
func noteBuildID(data []byte, align uint64) string {
	if align < 4 {
		align = 4
	}
	pad := func(n uint64) uint64 { return (n + align - 1) &^ (align - 1) }
	for len(data) >= 12 {
		namesz := uint64(binary.LittleEndian.Uint32(data))
		descsz := uint64(binary.LittleEndian.Uint32(data[4:]))
		typ := binary.LittleEndian.Uint32(data[8:])
		nameEnd := 12 + pad(namesz)
		if nameEnd+descsz > uint64(len(data)) {
			return ""
		}
		if typ == 3 && namesz == 4 && string(data[12:15]) == "GNU" {
			return hex.EncodeToString(data[nameEnd : nameEnd+descsz])
		}
		descEnd := nameEnd + pad(descsz)
		if descEnd >= uint64(len(data)) {
			return ""
		}
		data = data[descEnd:]
	}
	return ""
}

// code reads n bytes of the object's code at link-time address addr.
func (o *Object) code(addr uint64, n int) ([]byte, error) {
	if o.elf == nil {
		return nil, fmt.Errorf("%s: no code to read", o.Path)
	}
	for _, p := range o.elf.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr+uint64(n) > p.Vaddr+p.Filesz {
			continue
		}
		b := make([]byte, n)
		if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
			return nil, fmt.Errorf("%s: read code at %#x: %w", o.Path, addr, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s: %#x is in no loadable segment", o.Path, addr)
}
