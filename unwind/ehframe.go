package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// cie is a Common Information Entry: what the FDEs that point to it share.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	// fdeEnc is how the FDEs' addresses are encoded ('R' augmentation).
	fdeEnc uint8
	// hasAugData says the FDEs carry augmentation data ('z').
	hasAugData bool
	// signal marks a signal trampoline ('S'): the caller's pc is the
	// interrupted instruction itself, not a return address.
	signal bool
	// hasLSDA says the FDEs carry an LSDA pointer ('L').
	hasLSDA bool
	// initial are the instructions that give every FDE's first row.
	initial []byte
}

// FDE is a Frame Description Entry: the CFI program for one range of code.
type FDE struct {
	// Start and End bound the code it describes, [Start, End), in link-time
	// addresses.
	Start, End uint64
	// Signal is set for signal trampolines, whose caller was interrupted
	// rather than making a call.
	Signal bool
	// LSDA says the code has a language-specific data area: landing
	// pads, which the unwinder enters when an exception passes.
	LSDA bool

	cie          *cie
	instructions []byte
}

// ehFrame is an .eh_frame section: the bytes and their virtual address.
type ehFrame struct {
	data []byte
	addr uint64
	// cies caches parsed CIEs by offset; a CIE is shared by many FDEs.
	// Only NewTable fills it, before the table is shared: sealed says it
	// is done, and a CIE parsed later is not cached.
	cies   map[int]*cie
	sealed bool
}

// errCIE reports an entry where an FDE was expected.
var errCIE = errors.New("entry is a CIE, not an FDE")

// entry reads the length and id words of the entry at off, and returns the
// reader positioned after the id, the offset of the id word, the id and the
// offset of the next entry. A zero length is the terminator some linkers
// append.
func (f *ehFrame) entry(off int) (r *reader, idOff int, id uint32, next int, err error) {
	if off < 0 || off >= len(f.data) {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: outside the section", off)
	}
	r = &reader{data: f.data, off: off, addr: f.addr}
	length := uint64(r.u32())
	if length == 0xffffffff {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: 64-bit DWARF is not used in .eh_frame", off)
	}
	if r.err != nil {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: %w", off, r.err)
	}
	if length == 0 {
		return nil, 0, 0, len(f.data), nil
	}
	end := r.off + int(length)
	if length > uint64(len(f.data)) || end > len(f.data) {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: length %d runs past the section", off, length)
	}
	r.data = f.data[:end]
	idOff = r.off
	id = r.u32()
	if r.err != nil {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: %w", off, r.err)
	}
	return r, idOff, id, end, nil
}

// fde parses the FDE at offset off.
func (f *ehFrame) fde(off int) (*FDE, error) {
	r, idOff, id, _, err := f.entry(off)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf(".eh_frame entry at %#x: terminator, not an FDE", off)
	}
	if id == 0 {
		return nil, fmt.Errorf(".eh_frame entry at %#x: %w", off, errCIE)
	}
	// The id of an FDE is the distance back from the id word to its CIE.
	cieOff := idOff - int(id)
	c, err := f.cie(cieOff)
	if err != nil {
		return nil, fmt.Errorf(".eh_frame FDE at %#x: %w", off, err)
	}
	fde := &FDE{cie: c, Signal: c.signal}
	fde.Start = r.pointer(c.fdeEnc, 0)
	// The range has the address's format but is never relative.
	fde.End = fde.Start + r.value(c.fdeEnc&0x0f)
	if c.hasAugData {
		// The LSDA pointer is the only augmentation data of an FDE; an
		// FDE without one has it zero, whatever its encoding.
		aug := r.bytes(int(r.uleb()))
		fde.LSDA = c.hasLSDA && slices.ContainsFunc(aug, func(b byte) bool { return b != 0 })
	}
	if r.err != nil {
		return nil, fmt.Errorf(".eh_frame FDE at %#x: %w", off, r.err)
	}
	fde.instructions = r.data[r.off:]
	return fde, nil
}

// cie returns the CIE at offset off, parsing it once.
func (f *ehFrame) cie(off int) (*cie, error) {
	if c, ok := f.cies[off]; ok {
		return c, nil
	}
	if off < 0 || off >= len(f.data) {
		return nil, fmt.Errorf("CIE pointer %#x outside .eh_frame", off)
	}
	c, err := f.parseCIE(off)
	if err != nil {
		return nil, fmt.Errorf("CIE at %#x: %w", off, err)
	}
	if f.sealed {
		return c, nil
	}
	if f.cies == nil {
		f.cies = map[int]*cie{}
	}
	f.cies[off] = c
	return c, nil
}

// cacheCIEs parses and caches every CIE of the section, and seals the
// cache. A CIE that does not parse is left out: the FDEs that name it
// fail when they are looked up.
func (f *ehFrame) cacheCIEs() {
	// The walk reads only each entry's length and id, as entry would,
	// without a reader for each of thousands of FDEs.
	for off := 0; off+8 <= len(f.data); {
		length := binary.LittleEndian.Uint32(f.data[off:])
		end := off + 4 + int(length)
		if length == 0 || length == 0xffffffff || end > len(f.data) || end < off+8 {
			break
		}
		if binary.LittleEndian.Uint32(f.data[off+4:]) == 0 {
			f.cie(off)
		}
		off = end
	}
	f.sealed = true
}

func (f *ehFrame) parseCIE(off int) (*cie, error) {
	r, _, id, _, err := f.entry(off)
	if err != nil {
		return nil, err
	}
	if r == nil || id != 0 {
		return nil, errors.New("not a CIE")
	}
	version := r.u8()
	if version != 1 && version != 3 {
		return nil, fmt.Errorf("unsupported version %d", version)
	}
	aug := r.cstring()
	if strings.HasPrefix(aug, "eh") {
		r.u64()
		aug = aug[2:]
	}
	c := &cie{fdeEnc: peAbsptr}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if err := c.augmentation(r, aug); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	if c.raReg != uint64(RA) {
		return nil, fmt.Errorf("return address in register %d, not %d", c.raReg, RA)
	}
	c.initial = r.data[r.off:]
	return c, nil
}

// augmentation reads the augmentation data that aug announces.
func (c *cie) augmentation(r *reader, aug string) error {
	if aug == "" {
		return nil
	}
	if aug[0] != 'z' {
		return fmt.Errorf("unsupported augmentation %q", aug)
	}
	c.hasAugData = true
	n := r.uleb()
	data := &reader{data: r.bytes(int(n)), addr: r.addr + uint64(r.off) - n}
	for _, a := range aug[1:] {
		switch a {
		case 'R':
			c.fdeEnc = data.u8()
		case 'P':
			// The personality routine is of no use to an unwind that
			// runs no handlers: skip its pointer, without following
			// it when it is indirect.
			data.pointer(data.u8()&^peIndirect, 0)
		case 'L':
			data.u8()
			c.hasLSDA = true
		case 'S':
			c.signal = true
		case 'B', 'G':
			// AArch64 key and memory tagging: no data, nothing for x86_64.
		default:
			// What follows an unknown letter cannot be read.
			return fmt.Errorf("unsupported augmentation %q", aug)
		}
	}
	if data.err != nil {
		return fmt.Errorf("augmentation %q: %w", aug, data.err)
	}
	return r.err
}

// index lists every FDE of the section, for objects without a usable
// .eh_frame_hdr.
func (f *ehFrame) index() ([]indexEntry, error) {
	var idx []indexEntry
	for off := 0; off < len(f.data); {
		r, _, id, next, err := f.entry(off)
		if err != nil {
			return nil, err
		}
		if r != nil && id != 0 {
			fde, err := f.fde(off)
			if err != nil {
				return nil, err
			}
			idx = append(idx, indexEntry{start: fde.Start, off: off})
		}
		off = next
	}
	return idx, nil
}

// indexEntry locates the FDE whose range starts at start.
type indexEntry struct {
	start uint64
	off   int
}
