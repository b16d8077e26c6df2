// Package image reads what the static analysis needs of an ELF object:
// its code, where its functions start, the symbols it exports and
// imports, which words of its data hold addresses once relocated (RELA,
// RELR and IRELATIVE relocations, or plain words in a position-dependent
// executable), the strings it holds, and what the loader needs to find
// its libraries. It reads the dynamic segment, not section headers,
// wherever it can, so that stripped objects read alike.
package image

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/unwind"
)

// Dynamic is what the loader reads of an object to load it and its
// libraries.
type Dynamic struct {
	// Path is the file it was read from.
	Path    string
	BuildID string
	Soname  string
	// Type is ET_EXEC or ET_DYN.
	Type  elf.Type
	Entry uint64
	// Interp is the PT_INTERP of an executable: its dynamic loader.
	Interp string
	// Needed, RunPath and RPath are the loader's DT_NEEDED, DT_RUNPATH
	// and DT_RPATH, unexpanded.
	Needed, RunPath, RPath []string
	// BindNow says the loader binds every symbol at start (DF_BIND_NOW,
	// DF_1_NOW): the lazy-binding resolver never runs for it.
	BindNow bool
	// InitFini are the functions DT_INIT and DT_FINI name, which the
	// loader calls.
	InitFini []uint64
}

// Image is an ELF object as the analysis reads it.
type Image struct {
	Dynamic

	// Code is the executable segments' bytes.
	Code []Segment
	// Functions are where code starts: every FDE of the CFI and every
	// exported function, sorted, each with where its code ends at the
	// latest (Extent).
	Functions []Range
	// Exports are the functions the object defines for others, by name
	// (one name may have several versions).
	Exports map[string][]Export
	// Data are the data objects it defines for others, by name: their
	// addresses.
	Data map[string]uint64
	// Words are the data words that hold an address once relocated, by
	// the word's address.
	Words map[uint64]Word
	// Sections are the object's allocated sections that hold no code,
	// where it has section headers.
	Sections []Section
	// ReadOnly are the ranges of data made read-only once relocated
	// (PT_GNU_RELRO), sorted.
	ReadOnly []Range

	data []Segment
	// fdes are the ranges the CFI describes, sorted.
	fdes []Frame
}

// Frame is the code an FDE describes.
type Frame struct {
	Range
	// LSDA says the code has landing pads, which only the unwinder
	// enters.
	LSDA bool
}

// Segment is a loadable segment's bytes at its link-time address.
type Segment struct {
	Addr uint64
	Data []byte
}

// Range is a range of addresses, [Start, End).
type Range struct{ Start, End uint64 }

// Section is a named range of data.
type Section struct {
	Name string
	Range
}

// Export is a function an object defines.
type Export struct {
	Addr uint64
	// IFunc says Addr is a resolver that returns the function's address.
	IFunc bool
}

// WordKind says what a relocated word holds.
type WordKind uint8

// Kinds of words.
const (
	// Local is an address inside the object (RELATIVE, RELR, or a word
	// of a position-dependent executable).
	Local WordKind = iota
	// Symbol is the address of a symbol the loader looks up by name: a
	// GOT slot (GLOB_DAT, JUMP_SLOT) or a data word (R_X86_64_64).
	Symbol
	// Resolved is the value an IRELATIVE resolver at Addr returns.
	Resolved
)

// Word is a data word that holds an address.
type Word struct {
	Kind WordKind
	// Addr is a Local word's address or a Resolved word's resolver.
	Addr uint64
	// Name is a Symbol word's symbol.
	Name string
	// Call says a Symbol word is a JUMP_SLOT: the PLT's.
	Call bool
	// Raw says a Local word has no relocation: a word of a
	// position-dependent executable whose value falls in its code,
	// which may be a number.
	Raw bool
}

// ErrNotX86_64 reports an ELF file of another machine or class.
var ErrNotX86_64 = errors.New("not an x86-64 ELF object")

// Open reads the object at path.
func Open(path string) (*Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// OpenDynamic reads only what the loader reads of the object at path.
func OpenDynamic(path string) (*Dynamic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ef, err := newFile(path, f)
	if err != nil {
		return nil, err
	}
	d := &Dynamic{Path: path, Type: ef.Type, Entry: ef.Entry, BuildID: attribute.BuildID(ef)}
	if err := d.read(ef); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// newFile opens an x86-64 ELF file.
func newFile(path string, r io.ReaderAt) (*elf.File, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%s: %w", path, ErrNotX86_64)
	}
	return ef, nil
}

// Read reads an object from r; path names it.
func Read(path string, r io.ReaderAt) (*Image, error) {
	ef, err := newFile(path, r)
	if err != nil {
		return nil, err
	}
	img := &Image{Dynamic: Dynamic{Path: path, Type: ef.Type, Entry: ef.Entry, BuildID: attribute.BuildID(ef)}}
	steps := []func(*elf.File) error{img.Dynamic.read, img.readSegments, img.readExports, img.readRelocations, img.readFunctions}
	for _, step := range steps {
		if err := step(ef); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, sec := range ef.Sections {
		if sec.Flags&elf.SHF_ALLOC != 0 && sec.Flags&elf.SHF_EXECINSTR == 0 && sec.Size > 0 {
			img.Sections = append(img.Sections, Section{sec.Name, Range{sec.Addr, sec.Addr + sec.Size}})
		}
	}
	return img, nil
}

// readSegments reads the loadable segments, code and data apart.
func (img *Image) readSegments(ef *elf.File) error {
	for _, p := range ef.Progs {
		switch p.Type {
		case elf.PT_GNU_RELRO:
			img.ReadOnly = append(img.ReadOnly, Range{p.Vaddr, p.Vaddr + p.Memsz})
		case elf.PT_LOAD:
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("read segment at %#x: %w", p.Vaddr, err)
			}
			seg := Segment{Addr: p.Vaddr, Data: b}
			switch {
			case p.Flags&elf.PF_X != 0:
				img.Code = append(img.Code, seg)
			case p.Flags&elf.PF_W == 0:
				img.ReadOnly = append(img.ReadOnly, Range{p.Vaddr, p.Vaddr + p.Memsz})
				img.data = append(img.data, seg)
			default:
				img.data = append(img.data, seg)
			}
		}
	}
	sort.Slice(img.ReadOnly, func(i, j int) bool { return img.ReadOnly[i].Start < img.ReadOnly[j].Start })
	return nil
}

// IsCode says whether addr lies in the object's code.
func (img *Image) IsCode(addr uint64) bool {
	_, ok := img.CodeAt(addr)
	return ok
}

// CodeAt returns the code from addr to the end of its segment.
func (img *Image) CodeAt(addr uint64) ([]byte, bool) {
	return at(img.Code, addr)
}

// Word8 returns the 8-byte little-endian word at addr in any segment.
func (img *Image) Word8(addr uint64) (uint64, bool) { return img.Word(addr, 8) }

// Word returns the size-byte (at most 8) little-endian word at addr in
// any segment.
func (img *Image) Word(addr uint64, size int) (uint64, bool) {
	for _, segs := range [][]Segment{img.data, img.Code} {
		if b, ok := at(segs, addr); ok && len(b) >= size {
			var w uint64
			for i := size - 1; i >= 0; i-- {
				w = w<<8 | uint64(b[i])
			}
			return w, true
		}
	}
	return 0, false
}

// CString returns the NUL-terminated string at addr.
func (img *Image) CString(addr uint64) (string, bool) {
	for _, segs := range [][]Segment{img.data, img.Code} {
		if b, ok := at(segs, addr); ok {
			for i, c := range b {
				if c == 0 {
					return string(b[:i]), true
				}
			}
		}
	}
	return "", false
}

func at(segs []Segment, addr uint64) ([]byte, bool) {
	for _, s := range segs {
		if addr >= s.Addr && addr < s.Addr+uint64(len(s.Data)) {
			return s.Data[addr-s.Addr:], true
		}
	}
	return nil, false
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// read reads what the loader needs: the program interpreter and the
// dynamic section.
func (img *Dynamic) read(ef *elf.File) error {
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("read PT_INTERP: %w", err)
			}
			img.Interp = cString(b)
		}
	}
	var err error
	get := func(tag elf.DynTag) []string {
		v, e := ef.DynString(tag)
		err = errors.Join(err, e)
		return v
	}
	img.Needed, img.RunPath, img.RPath = get(elf.DT_NEEDED), get(elf.DT_RUNPATH), get(elf.DT_RPATH)
	if names := get(elf.DT_SONAME); len(names) > 0 {
		img.Soname = names[0]
	}
	flags, _ := ef.DynValue(elf.DT_FLAGS)
	flags1, _ := ef.DynValue(elf.DT_FLAGS_1)
	for _, v := range flags {
		img.BindNow = img.BindNow || v&uint64(elf.DF_BIND_NOW) != 0
	}
	for _, v := range flags1 {
		img.BindNow = img.BindNow || v&uint64(elf.DF_1_NOW) != 0
	}
	for _, tag := range []elf.DynTag{elf.DT_INIT, elf.DT_FINI} {
		addrs, _ := ef.DynValue(tag)
		img.InitFini = append(img.InitFini, addrs...)
	}
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil
	}
	return err
}

// readExports reads the functions the object defines in its dynamic
// symbol table.
func (img *Image) readExports(ef *elf.File) error {
	img.Exports, img.Data = map[string][]Export{}, map[string]uint64{}
	syms, err := ef.DynamicSymbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamic symbols: %w", err)
	}
	for _, s := range syms {
		typ, bind := elf.ST_TYPE(s.Info), elf.ST_BIND(s.Info)
		if s.Section == elf.SHN_UNDEF || s.Value == 0 || (bind != elf.STB_GLOBAL && bind != elf.STB_WEAK) {
			continue
		}
		if typ == elf.STT_OBJECT {
			img.Data[s.Name] = s.Value
			continue
		}
		if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC {
			continue
		}
		e := Export{Addr: s.Value, IFunc: typ == elf.STT_GNU_IFUNC}
		if !containsExport(img.Exports[s.Name], e) {
			img.Exports[s.Name] = append(img.Exports[s.Name], e)
		}
	}
	return nil
}

func containsExport(es []Export, e Export) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// readFunctions lists where code starts: every FDE of the CFI and every
// exported function.
func (img *Image) readFunctions(ef *elf.File) error {
	t, err := unwind.Load(ef)
	switch {
	case errors.Is(err, unwind.ErrNoCFI):
	case err != nil:
		return err
	default:
		for i := range t.Len() {
			fde, err := t.FDE(i)
			if err != nil {
				return err
			}
			if img.IsCode(fde.Start) && fde.End > fde.Start {
				img.fdes = append(img.fdes, Frame{Range{fde.Start, fde.End}, fde.LSDA})
			}
		}
	}
	sort.Slice(img.fdes, func(i, j int) bool { return img.fdes[i].Start < img.fdes[j].Start })
	starts := map[uint64]bool{}
	for _, r := range img.fdes {
		starts[r.Start] = true
	}
	for _, es := range img.Exports {
		for _, e := range es {
			if img.IsCode(e.Addr) {
				starts[e.Addr] = true
			}
		}
	}
	for start := range starts {
		img.Functions = append(img.Functions, Range{start, img.Extent(start)})
	}
	sort.Slice(img.Functions, func(i, j int) bool { return img.Functions[i].Start < img.Functions[j].Start })
	return nil
}

// Frame returns the FDE that covers addr, if one does.
func (img *Image) Frame(addr uint64) (Frame, bool) {
	i := sort.Search(len(img.fdes), func(i int) bool { return img.fdes[i].Start > addr })
	if i > 0 && img.fdes[i-1].End > addr {
		return img.fdes[i-1], true
	}
	return Frame{}, false
}

// Extent is where the code of a function entered at addr ends at the
// latest: the start of the next FDE, or the end of the segment. Code may
// run on past the end of its own FDE: glibc's clone ends its CFI just
// before the syscall instruction.
func (img *Image) Extent(addr uint64) uint64 {
	end := img.CodeEnd(addr)
	i := sort.Search(len(img.fdes), func(i int) bool { return img.fdes[i].Start > addr })
	if i < len(img.fdes) {
		return min(end, img.fdes[i].Start)
	}
	return end
}

// CodeEnd is the end of the code segment that holds addr.
func (img *Image) CodeEnd(addr uint64) uint64 {
	code, _ := img.CodeAt(addr)
	return addr + uint64(len(code))
}
