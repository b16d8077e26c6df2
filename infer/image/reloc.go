package image

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// The dynamic tags of RELR relocations, which debug/elf does not name.
const (
	dtRELRSZ elf.DynTag = 35
	dtRELR   elf.DynTag = 36
)

// readRelocations finds the data words that hold addresses: those the
// dynamic relocations (RELA and RELR) set, or, in a position-dependent
// executable, which no relocation needs, every aligned word that holds
// an address of its code.
func (img *Image) readRelocations(ef *elf.File) error {
	img.Words = map[uint64]Word{}
	syms, _ := ef.DynamicSymbols()
	for _, table := range [][2]elf.DynTag{{elf.DT_RELA, elf.DT_RELASZ}, {elf.DT_JMPREL, elf.DT_PLTRELSZ}} {
		data, err := img.dynTable(ef, table[0], table[1])
		if err != nil {
			return err
		}
		img.readRela(data, syms)
	}
	data, err := img.dynTable(ef, dtRELR, dtRELRSZ)
	if err != nil {
		return err
	}
	img.readRelr(data)
	if img.Type == elf.ET_EXEC {
		img.readAbsolute()
	}
	return nil
}

// dynTable reads the table a dynamic tag points to, of the size another
// gives.
func (img *Image) dynTable(ef *elf.File, addrTag, sizeTag elf.DynTag) ([]byte, error) {
	addrs, _ := ef.DynValue(addrTag)
	sizes, _ := ef.DynValue(sizeTag)
	if len(addrs) == 0 || len(sizes) == 0 || sizes[0] == 0 {
		return nil, nil
	}
	for _, segs := range [][]Segment{img.data, img.Code} {
		if b, ok := at(segs, addrs[0]); ok && uint64(len(b)) >= sizes[0] {
			return b[:sizes[0]], nil
		}
	}
	return nil, fmt.Errorf("%s at %#x (%d bytes) is in no loadable segment", addrTag, addrs[0], sizes[0])
}

// readRela reads Elf64_Rela entries.
func (img *Image) readRela(data []byte, syms []elf.Symbol) {
	for len(data) >= 24 {
		off := binary.LittleEndian.Uint64(data)
		info := binary.LittleEndian.Uint64(data[8:])
		addend := binary.LittleEndian.Uint64(data[16:])
		data = data[24:]
		typ, sym := elf.R_X86_64(info&0xffffffff), int(info>>32)
		switch typ {
		case elf.R_X86_64_RELATIVE:
			img.Words[off] = Word{Kind: Local, Addr: addend}
		case elf.R_X86_64_IRELATIVE:
			img.Words[off] = Word{Kind: Resolved, Addr: addend}
		case elf.R_X86_64_64, elf.R_X86_64_GLOB_DAT, elf.R_X86_64_JMP_SLOT:
			if sym > 0 && sym <= len(syms) {
				img.Words[off] = Word{Kind: Symbol, Name: syms[sym-1].Name, Call: typ == elf.R_X86_64_JMP_SLOT}
			}
		}
	}
}

// readRelr reads RELR entries: an address, then bitmaps of the words
// after it that are relocated too. Each such word holds its link-time
// value.
func (img *Image) readRelr(data []byte) {
	var base uint64
	for ; len(data) >= 8; data = data[8:] {
		entry := binary.LittleEndian.Uint64(data)
		if entry&1 == 0 {
			img.relative(entry)
			base = entry + 8
			continue
		}
		for i := uint64(0); i < 63; i++ {
			if entry>>(i+1)&1 != 0 {
				img.relative(base + 8*i)
			}
		}
		base += 63 * 8
	}
}

// relative notes a word that holds a link-time address.
func (img *Image) relative(addr uint64) {
	if v, ok := img.Word8(addr); ok {
		img.Words[addr] = Word{Kind: Local, Addr: v}
	}
}

// readAbsolute notes every aligned data word of a position-dependent
// executable that holds an address of its code.
func (img *Image) readAbsolute() {
	for _, seg := range img.data {
		for off := (8 - seg.Addr%8) % 8; off+8 <= uint64(len(seg.Data)); off += 8 {
			addr := seg.Addr + off
			if _, ok := img.Words[addr]; ok {
				continue
			}
			if v := le64(seg.Data[off:]); img.IsCode(v) {
				img.Words[addr] = Word{Kind: Local, Addr: v, Raw: true}
			}
		}
	}
}
