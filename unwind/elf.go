package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
)

// ErrNoCFI reports an object without .eh_frame.
var ErrNoCFI = errors.New("no .eh_frame")

// Load reads the CFI of an ELF object: its .eh_frame and .eh_frame_hdr
// sections, or, in an object without section headers, the .eh_frame_hdr
// that PT_GNU_EH_FRAME locates and the .eh_frame it points into.
func Load(f *elf.File) (*Table, error) { return load(f, false) }

// Open is Load, but reads .eh_frame an entry at a time, as an unwind
// looks one up, from f, which must stay open while the table is used: a
// supervisor unwinds through a few FDEs of each object at its first
// attributed call, which waits (libcrypto has ten thousand, 450 KiB).
// The FDEs of an object without .eh_frame_hdr, which a scan indexes, are
// read at once.
func Open(f *elf.File) (*Table, error) { return load(f, true) }

func load(f *elf.File, lazily bool) (*Table, error) {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("unwind: %s %s object, not x86_64", f.Class, f.Machine)
	}
	frame := f.Section(".eh_frame")
	if frame == nil {
		return loadFromSegments(f)
	}
	hdr := f.Section(".eh_frame_hdr")
	var hdrData []byte
	var hdrAddr uint64
	if hdr != nil {
		var err error
		if hdrData, err = hdr.Data(); err != nil {
			return nil, fmt.Errorf("unwind: read .eh_frame_hdr: %w", err)
		}
		hdrAddr = hdr.Addr
	}
	ef := &ehFrame{src: frame, size: int(frame.Size), addr: frame.Addr}
	if !lazily || hdr == nil {
		data, err := frame.Data()
		if err != nil {
			return nil, fmt.Errorf("unwind: read .eh_frame: %w", err)
		}
		ef = newFrame(data, frame.Addr)
	}
	t, err := newTable(ef, hdrData, hdrAddr)
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	return t, nil
}

// loadFromSegments finds the CFI through PT_GNU_EH_FRAME. The .eh_frame it
// points to has no recorded length: it runs to the end of its segment, or
// to the zero terminator linkers append.
func loadFromSegments(f *elf.File) (*Table, error) {
	var hdrProg *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME {
			hdrProg = p
		}
	}
	if hdrProg == nil {
		return nil, fmt.Errorf("unwind: %w", ErrNoCFI)
	}
	hdr := make([]byte, hdrProg.Filesz)
	if _, err := hdrProg.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("unwind: read PT_GNU_EH_FRAME: %w", err)
	}
	h, err := parseHdr(hdr, hdrProg.Vaddr)
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	frame, err := segmentFrom(f, h.framePtr)
	if err != nil {
		return nil, err
	}
	t, err := NewTable(terminated(frame), h.framePtr, hdr, hdrProg.Vaddr)
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	return t, nil
}

// segmentFrom reads the loadable segment that holds addr, from addr on.
func segmentFrom(f *elf.File, addr uint64) ([]byte, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr >= p.Vaddr+p.Filesz {
			continue
		}
		data := make([]byte, p.Vaddr+p.Filesz-addr)
		if _, err := p.ReadAt(data, int64(addr-p.Vaddr)); err != nil {
			return nil, fmt.Errorf("unwind: read .eh_frame: %w", err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("unwind: .eh_frame at %#x is in no loadable segment", addr)
}

// terminated cuts data at the first zero-length entry, where .eh_frame
// ends in a segment that holds more.
func terminated(data []byte) []byte {
	f := newFrame(data, 0)
	for off := 0; off < len(data); {
		r, _, _, next, err := f.entry(off)
		if err != nil || r == nil {
			return data[:off]
		}
		off = next
	}
	return data
}
