package attribute

import (
	"debug/elf"
	"encoding/binary"
	"testing"
)

// TestSlots checks the GOT slots an object's calls go through, read past
// its leading relative relocations (DT_RELACOUNT), against debug/elf's
// reading of every relocation, on objects of the machine: each slot a
// relocation binds to a symbol is named after it, and a relative
// relocation's slot after nothing.
func TestSlots(t *testing.T) {
	eachObject(t, func(path string, f *elf.File) {
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		c := readCalls(f, readExports(f).syms)
		bound, relative := 0, 0
		for _, sec := range f.Sections {
			if sec.Type != elf.SHT_RELA {
				continue
			}
			data, err := sec.Data()
			if err != nil {
				t.Fatal(err)
			}
			for ; len(data) >= relaSize; data = data[relaSize:] {
				off, info := binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
				switch typ, sym := uint32(info), int(info>>32); {
				case (typ == rX86_64GlobDat || typ == rX86_64JumpSlot) && sym > 0:
					bound++
					if got := c.slot(off); got != syms[sym-1].Name {
						t.Errorf("%s: slot %#x: %q, want %q", path, off, got, syms[sym-1].Name)
					}
				case typ == uint32(elf.R_X86_64_RELATIVE) && relative < 100:
					relative++
					if got := c.slot(off); got != "" {
						t.Errorf("%s: relative slot %#x: %q", path, off, got)
					}
				}
			}
		}
		if bound == 0 {
			t.Errorf("%s: no relocation binds a slot to a symbol", path)
		}
	})
}
