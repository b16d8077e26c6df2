package attribute

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
)

// dynsyms is an object's dynamic symbol table and its strings, read an
// entry at a time from the file, which must stay open: a supervisor asks
// at a program's first attributed call, which waits, whether each
// library defines a name, and libcrypto's table and strings are 230 KiB
// of which a lookup through .gnu.hash reads a few entries. The entries
// are Elf64_Sym, of symSize bytes.
type dynsyms struct {
	table, strs io.ReaderAt
	n           int
	strSize     int64
}

const symSize = 24

// readDynsyms finds f's dynamic symbols; it reads none yet.
func readDynsyms(f *elf.File) dynsyms {
	sec, strs := f.Section(".dynsym"), f.Section(".dynstr")
	if sec == nil || strs == nil || sec.Type == elf.SHT_NOBITS || strs.Type == elf.SHT_NOBITS {
		return dynsyms{}
	}
	return dynsyms{table: sec, strs: strs, n: int(sec.Size / symSize), strSize: int64(strs.Size)}
}

// inMemory returns d read at once: for a walk of every symbol.
func (d dynsyms) inMemory() dynsyms {
	table, strs := make([]byte, d.n*symSize), make([]byte, d.strSize)
	if d.n == 0 || !readFull(d.table, table) || !readFull(d.strs, strs) {
		return dynsyms{}
	}
	return dynsyms{table: bytes.NewReader(table), strs: bytes.NewReader(strs), n: d.n, strSize: d.strSize}
}

func readFull(r io.ReaderAt, b []byte) bool {
	n, _ := r.ReadAt(b, 0)
	return n == len(b)
}

func (d dynsyms) count() int { return d.n }

// entry is symbol i's Elf64_Sym, nil where it cannot be read.
func (d dynsyms) entry(i int) []byte {
	if i < 0 || i >= d.n {
		return nil
	}
	e := make([]byte, symSize)
	if n, _ := d.table.ReadAt(e, int64(i*symSize)); n < symSize {
		return nil
	}
	return e
}

// nameChunk is how much of a name one read takes: nearly every symbol's
// fits.
const nameChunk = 64

// name is the name of symbol i, "" for none.
func (d dynsyms) name(i int) string {
	e := d.entry(i)
	if i <= 0 || e == nil {
		return ""
	}
	off := int64(binary.LittleEndian.Uint32(e))
	var name []byte
	for off < d.strSize {
		chunk := make([]byte, min(nameChunk, d.strSize-off))
		n, _ := d.strs.ReadAt(chunk, off)
		if end := bytes.IndexByte(chunk[:n], 0); end >= 0 {
			return string(append(name, chunk[:end]...))
		}
		if n < len(chunk) {
			return ""
		}
		name, off = append(name, chunk...), off+int64(n)
	}
	return ""
}

// function says whether symbol i is a function the object defines.
func (d dynsyms) function(i int) bool {
	e := d.entry(i)
	if e == nil {
		return false
	}
	info, shndx := e[4], binary.LittleEndian.Uint16(e[6:])
	return elf.ST_TYPE(info) == elf.STT_FUNC && elf.SectionIndex(shndx) != elf.SHN_UNDEF
}

// extent is the link-time address and size of symbol i.
func (d dynsyms) extent(i int) (value, size uint64) {
	e := d.entry(i)
	if e == nil {
		return 0, 0
	}
	return binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
}

// find looks symbol name up entry by entry, for an object without
// .gnu.hash.
func (d dynsyms) find(name string) (int, bool) {
	for i := 1; i < d.count(); i++ {
		if d.name(i) == name {
			return i, true
		}
	}
	return 0, false
}

// functions is every function the object defines, by name.
func (d dynsyms) functions() map[string]bool {
	out := map[string]bool{}
	for i := 1; i < d.count(); i++ {
		if d.function(i) {
			out[d.name(i)] = true
		}
	}
	return out
}

// A .gnu.hash section: nbuckets, symoffset, bloom words and shift, then
// the bloom filter, the buckets and the chains (glibc's dl-lookup.c).
const gnuHashHeader = 16

// hashable says whether hash is a .gnu.hash section whose parts lie
// inside it, over this table.
func (d dynsyms) hashable(hash []byte) bool {
	if len(hash) < gnuHashHeader {
		return false
	}
	nbuckets := uint64(binary.LittleEndian.Uint32(hash))
	symoffset := uint64(binary.LittleEndian.Uint32(hash[4:]))
	bloom := uint64(binary.LittleEndian.Uint32(hash[8:]))
	chains := gnuHashHeader + 8*bloom + 4*nbuckets
	return nbuckets > 0 && symoffset <= uint64(d.count()) &&
		chains+4*(uint64(d.count())-symoffset) <= uint64(len(hash))
}

// lookup finds symbol name through the .gnu.hash section hash, which
// hashable accepted.
func (d dynsyms) lookup(hash []byte, name string) (int, bool) {
	h := gnuHash(name)
	nbuckets := binary.LittleEndian.Uint32(hash)
	symoffset := int(binary.LittleEndian.Uint32(hash[4:]))
	bloom := int(binary.LittleEndian.Uint32(hash[8:]))
	buckets := gnuHashHeader + 8*bloom
	chains := buckets + 4*int(nbuckets)
	i := int(binary.LittleEndian.Uint32(hash[buckets+4*int(h%nbuckets):]))
	if i < symoffset {
		return 0, false
	}
	for ; i < d.count(); i++ {
		c := binary.LittleEndian.Uint32(hash[chains+4*(i-symoffset):])
		if c|1 == h|1 && d.name(i) == name {
			return i, true
		}
		if c&1 != 0 {
			return 0, false
		}
	}
	return 0, false
}

// gnuHash is the GNU hash of a symbol name (the djb2 hash).
func gnuHash(name string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(name); i++ {
		h = h*33 + uint32(name[i])
	}
	return h
}
