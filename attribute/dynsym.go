package attribute

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// dynsyms is an object's dynamic symbol table and its strings, as the
// file holds them: Elf64_Sym entries of symSize bytes.
type dynsyms struct {
	table, strs []byte
}

const symSize = 24

func readDynsyms(f *elf.File) dynsyms {
	sec, strs := f.Section(".dynsym"), f.Section(".dynstr")
	if sec == nil || strs == nil {
		return dynsyms{}
	}
	table, err := sec.Data()
	if err != nil {
		return dynsyms{}
	}
	s, err := strs.Data()
	if err != nil {
		return dynsyms{}
	}
	return dynsyms{table: table, strs: s}
}

func (d dynsyms) count() int { return len(d.table) / symSize }

// name is the name of symbol i, "" for none.
func (d dynsyms) name(i int) string {
	if i <= 0 || i >= d.count() {
		return ""
	}
	off := int(binary.LittleEndian.Uint32(d.table[i*symSize:]))
	if off >= len(d.strs) {
		return ""
	}
	end := bytes.IndexByte(d.strs[off:], 0)
	if end < 0 {
		return ""
	}
	return string(d.strs[off : off+end])
}

// function says whether symbol i is a function the object defines.
func (d dynsyms) function(i int) bool {
	e := d.table[i*symSize:]
	info, shndx := e[4], binary.LittleEndian.Uint16(e[6:])
	return elf.ST_TYPE(info) == elf.STT_FUNC && elf.SectionIndex(shndx) != elf.SHN_UNDEF
}

// extent is the link-time address and size of symbol i.
func (d dynsyms) extent(i int) (value, size uint64) {
	e := d.table[i*symSize:]
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
