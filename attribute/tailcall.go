package attribute

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math"
	"sync"
)

// A library function that ends in a call to libc is compiled to a jump
// (a tail call): `void say(const char *s) { puts(s); fflush(stdout); }`
// ends in `jmp fflush@plt`. Its frame is gone by the time libc makes the
// call, and the innermost frame outside the runtime is its caller's. But
// that frame holds the address the caller returns to, right after the
// instruction that called the library: where that instruction names its
// target (a direct call into the caller's PLT, or an indirect call
// through its GOT, as every call from one object to another is), the
// target's symbol, resolved in the address space, says which object the
// caller called. If that object is another one outside the runtime, the
// runtime was entered from it, by a jump: the call is that object's.
//
// What this cannot see: a call through a function pointer in a register
// or in memory other than the GOT (the caller's frame then keeps the
// call), and a tail call from one library into another that tail-calls
// libc in turn (the first library gets it).

// An object's linkage is read in two parts, each once, when first
// needed: a supervisor reads them at a program's first attributed call,
// which waits. Its exports (whether it defines a function) are asked of
// every object of the space; its calls (the GOT slots its relocations
// bind, libcrypto's some eight thousand) only of the object a frame
// returns into.

// exports are the functions an object defines. The dynamic symbol table
// is read as a lookup needs it: libcrypto exports some five thousand
// symbols, of which a lookup reads one or two.
type exports struct {
	syms dynsyms
	// hash is the object's .gnu.hash section, nil where it has none;
	// defined then holds the functions it exports.
	hash    []byte
	defined map[string]bool
}

// calls are what an object's code tells about the calls it makes to
// other objects.
type calls struct {
	// plt are the ranges of the PLT sections, whose entries jump through
	// GOT slots.
	plt [][2]uint64
	// relocs are the relocations that may bind GOT slots to symbols,
	// as the file has them: a slot is looked up by a scan, a few
	// microseconds, where indexing libcrypto's four thousand took a
	// third of a millisecond at a first attributed call, which waits.
	relocs [][]byte
	syms   dynsyms
}

// slot names the symbol GOT slot addr is bound to, "" for none.
func (c *calls) slot(addr uint64) string {
	for _, data := range c.relocs {
		for ; len(data) >= relaSize; data = data[relaSize:] {
			if binary.LittleEndian.Uint64(data) != addr {
				continue
			}
			info := binary.LittleEndian.Uint64(data[8:])
			if typ, sym := uint32(info), info>>32; (typ == rX86_64GlobDat || typ == rX86_64JumpSlot) && sym <= math.MaxInt32 {
				return c.syms.name(int(sym))
			}
		}
	}
	return ""
}

// exportsOf reads obj's exports, once.
func (obj *Object) exportsOf() *exports {
	obj.exportsOnce.Do(func() {
		obj.exports = readExports(obj.elf)
	})
	return obj.exports
}

// callsOf reads obj's calls, once.
func (obj *Object) callsOf() *calls {
	obj.callsOnce.Do(func() {
		obj.calls = readCalls(obj.elf, obj.exportsOf().syms)
	})
	return obj.calls
}

func readExports(f *elf.File) *exports {
	e := &exports{}
	if f == nil {
		return e
	}
	e.syms = readDynsyms(f)
	if sec := f.Section(".gnu.hash"); sec != nil {
		e.hash, _ = sec.Data()
	}
	if e.hash == nil || !e.syms.hashable(e.hash) {
		e.hash, e.defined = nil, e.syms.inMemory().functions()
	}
	return e
}

func readCalls(f *elf.File, syms dynsyms) *calls {
	c := &calls{syms: syms}
	if f == nil {
		return c
	}
	skip := relativeRelocs(f)
	for _, sec := range f.Sections {
		switch {
		case sec.Name == ".plt" || sec.Name == ".plt.sec" || sec.Name == ".plt.got":
			c.plt = append(c.plt, [2]uint64{sec.Addr, sec.Addr + sec.Size})
		case sec.Type == elf.SHT_RELA:
			if data := readRelocs(sec, skip[sec.Addr]); data != nil {
				c.relocs = append(c.relocs, data)
			}
		}
	}
	return c
}

// relaSize is the size of an Elf64_Rela.
const relaSize = 24

// relativeRelocs says how many relocations at the start of the section
// DT_RELA names are relative ones (DT_RELACOUNT), which bind no GOT slot
// to a symbol: the loader applies that many as relative ones, whatever
// they say, and they are most of a library's (16,922 of libcrypto's
// 18,109 in .rela.dyn), so they are not read.
func relativeRelocs(f *elf.File) map[uint64]uint64 {
	rela, err1 := f.DynValue(elf.DT_RELA)
	count, err2 := f.DynValue(elf.DT_RELACOUNT)
	if err1 != nil || err2 != nil || len(rela) != 1 || len(count) != 1 {
		return nil
	}
	return map[uint64]uint64{rela[0]: count[0]}
}

// defines says whether the object exports function name.
func (l *exports) defines(name string) bool {
	if l.hash == nil {
		return l.defined[name]
	}
	i, ok := l.syms.lookup(l.hash, name)
	return ok && l.syms.function(i)
}

// Relocations that bind a GOT slot to a symbol's address.
const (
	rX86_64GlobDat  = 6
	rX86_64JumpSlot = 7
)

// readRelocs reads the relocations of sec past its first skip.
func readRelocs(sec *elf.Section, skip uint64) []byte {
	if skip >= sec.Size/relaSize {
		return nil
	}
	data := make([]byte, sec.Size-skip*relaSize)
	if _, err := sec.ReadAt(data, int64(skip*relaSize)); err != nil {
		return nil
	}
	return data
}

// inPLT says whether link-time address addr lies in a PLT section.
func (l *calls) inPLT(addr uint64) bool {
	for _, r := range l.plt {
		if addr >= r[0] && addr < r[1] {
			return true
		}
	}
	return false
}

// Instructions a call from one object to another is made with.
var (
	// callGOT is `call *disp32(%rip)`: ff 15 disp32.
	callGOT = []byte{0xff, 0x15}
	// callRel is `call rel32`: e8 rel32.
	callRel = byte(0xe8)
	// jmpGOT is `jmp *disp32(%rip)`: ff 25 disp32, how a PLT entry
	// jumps, after endbr64 and a bnd prefix where the PLT has them.
	jmpGOT = []byte{0xff, 0x25}
)

// pltEntrySize is the most a PLT entry holds before its jump.
const pltEntrySize = 16

// callee returns the symbol that the instruction ending at link-time
// address ret (a return address) of obj calls, "" where it cannot be
// read off the code.
func (obj *Object) callee(ret uint64) string {
	if ret < 6 {
		return ""
	}
	code, err := obj.code(ret-6, 6)
	if err != nil {
		return ""
	}
	l := obj.callsOf()
	if bytes.HasPrefix(code, callGOT) {
		return l.slot(ret + uint64(int32(binary.LittleEndian.Uint32(code[2:]))))
	}
	if code[1] != callRel {
		return ""
	}
	target := ret + uint64(int32(binary.LittleEndian.Uint32(code[2:])))
	if !l.inPLT(target) {
		return ""
	}
	entry, err := obj.code(target, pltEntrySize)
	if err != nil {
		return ""
	}
	i := bytes.Index(entry, jmpGOT)
	if i < 0 || i+6 > len(entry) {
		return ""
	}
	next := target + uint64(i) + 6
	return l.slot(next + uint64(int32(binary.LittleEndian.Uint32(entry[i+2:]))))
}

// tailCallee returns the object outside the runtime, other than the
// frame's own, that the frame at site in m called, nil if there is none
// or it cannot be told: see the top of this file.
func (s *Space) tailCallee(m *Mapping, site uint64) *Object {
	link, err := m.linkAddr(site + 1)
	if err != nil || m.Object.elf == nil {
		return nil
	}
	sym := m.Object.callee(link)
	if sym == "" {
		return nil
	}
	definer := s.definer(sym)
	if definer == nil || definer == m.Object || definer.Runtime {
		return nil
	}
	return definer
}

// definer returns the object of the space outside the runtime that
// exports function sym; nil where none or several do, or where the
// runtime does and nothing else (an interposer, a library exporting what
// libc does, comes before libc in the loader's search order, as the
// libraries a program links with come before libc).
func (s *Space) definer(sym string) *Object {
	var found *Object
	for i := range s.maps {
		obj := s.maps[i].Object
		if obj == found || obj.Runtime || obj.Kind != File || obj.elf == nil || !obj.exportsOf().defines(sym) {
			continue
		}
		if found != nil {
			return nil
		}
		found = obj
	}
	return found
}

// linkCache holds an object's linkage, read when first needed.
type linkCache struct {
	exportsOnce sync.Once
	exports     *exports
	callsOnce   sync.Once
	calls       *calls
}
