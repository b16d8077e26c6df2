package unwind

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
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

// ehFrame is an .eh_frame section: where its bytes are read from, its
// size and its virtual address. An entry is read when it is looked up,
// not the section at once: a supervisor reads the tables of a program's
// objects at its first attributed call, which waits, and an unwind needs
// a few of libcrypto's ten thousand FDEs (450 KiB).
type ehFrame struct {
	src  io.ReaderAt
	size int
	addr uint64
	// cies caches parsed CIEs by offset; a CIE is shared by many FDEs.
	mu   sync.Mutex
	cies map[int]*cie
}

// newFrame returns the section whose bytes are data.
func newFrame(data []byte, addr uint64) *ehFrame {
	return &ehFrame{src: bytes.NewReader(data), size: len(data), addr: addr}
}

// entryWindow is how much of an entry one read takes: nearly every FDE
// and CIE fits.
const entryWindow = 256

// errCIE reports an entry where an FDE was expected.
var errCIE = errors.New("entry is a CIE, not an FDE")

// entry reads the entry at off, and returns a reader positioned after its
// id word, the offset of that word, the id and the offset of the next
// entry. A zero length is the terminator some linkers append: the reader
// is then nil.
func (f *ehFrame) entry(off int) (r *reader, idOff int, id uint32, next int, err error) {
	if off < 0 || off >= f.size {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: outside the section", off)
	}
	b, err := f.read(off)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: %w", off, err)
	}
	if len(b) == 4 {
		return nil, 0, 0, f.size, nil
	}
	r = &reader{data: b, off: 4, addr: f.addr + uint64(off)}
	id = r.u32()
	if r.err != nil {
		return nil, 0, 0, 0, fmt.Errorf(".eh_frame entry at %#x: %w", off, r.err)
	}
	return r, off + 4, id, off + len(b), nil
}

// read returns the bytes of the entry at off, its length word included:
// just that word for a terminator.
func (f *ehFrame) read(off int) ([]byte, error) {
	b := make([]byte, min(entryWindow, f.size-off))
	if n, err := f.src.ReadAt(b, int64(off)); n < len(b) {
		return nil, err
	}
	if len(b) < 4 {
		return nil, errors.New("truncated length")
	}
	length := uint64(binary.LittleEndian.Uint32(b))
	switch {
	case length == 0xffffffff:
		return nil, errors.New("64-bit DWARF is not used in .eh_frame")
	case length == 0:
		return b[:4], nil
	case length > uint64(f.size-off-4):
		return nil, fmt.Errorf("length %d runs past the section", length)
	case int(length)+4 <= len(b):
		return b[:length+4], nil
	}
	b = make([]byte, length+4)
	if n, err := f.src.ReadAt(b, int64(off)); n < len(b) {
		return nil, err
	}
	return b, nil
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.cies[off]; ok {
		return c, nil
	}
	if off < 0 || off >= f.size {
		return nil, fmt.Errorf("CIE pointer %#x outside .eh_frame", off)
	}
	c, err := f.parseCIE(off)
	if err != nil {
		return nil, fmt.Errorf("CIE at %#x: %w", off, err)
	}
	if f.cies == nil {
		f.cies = map[int]*cie{}
	}
	f.cies[off] = c
	return c, nil
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
	for off := 0; off < f.size; {
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
