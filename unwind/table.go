package unwind

import (
	"errors"
	"fmt"
	"sort"
)

// ErrNoFDE reports an address that no FDE of the object covers: code
// without CFI, such as hand-written assembly or a stripped .eh_frame.
var ErrNoFDE = errors.New("no CFI covers the address")

// Table is the CFI of one object: its .eh_frame and an index of the FDEs by
// address. It is safe for concurrent use once built.
type Table struct {
	frame *ehFrame
	// hdr, when not nil, is the sorted table of .eh_frame_hdr, searched
	// in place; otherwise idx, built by scanning .eh_frame, is.
	hdr *hdrTable
	idx []indexEntry
}

// NewTable builds a Table from an .eh_frame section at virtual address
// frameAddr and, if hdr is not nil, the .eh_frame_hdr at hdrAddr that
// indexes it. Without a usable .eh_frame_hdr the FDEs are indexed by a scan.
func NewTable(frame []byte, frameAddr uint64, hdr []byte, hdrAddr uint64) (*Table, error) {
	return newTable(newFrame(frame, frameAddr), hdr, hdrAddr)
}

// newTable builds a Table from frame and, if hdr is not nil, the
// .eh_frame_hdr at hdrAddr that indexes it.
func newTable(frame *ehFrame, hdr []byte, hdrAddr uint64) (*Table, error) {
	frameAddr := frame.addr
	t := &Table{frame: frame}
	if hdr != nil {
		h, err := parseHdr(hdr, hdrAddr)
		if err != nil {
			return nil, err
		}
		if h.count > 0 && h.framePtr == frameAddr {
			t.hdr = h
		}
	}
	if t.hdr == nil {
		idx, err := t.frame.index()
		if err != nil {
			return nil, err
		}
		sort.Slice(idx, func(i, j int) bool { return idx[i].start < idx[j].start })
		t.idx = idx
	}
	return t, nil
}

// Len is the number of FDEs in the index.
func (t *Table) Len() int {
	if t.hdr != nil {
		return t.hdr.count
	}
	return len(t.idx)
}

// FDE returns the i-th FDE in address order.
func (t *Table) FDE(i int) (*FDE, error) { return t.frame.fde(t.offset(i)) }

func (t *Table) start(i int) uint64 {
	if t.hdr != nil {
		return t.hdr.start(i)
	}
	return t.idx[i].start
}

func (t *Table) offset(i int) int {
	if t.hdr != nil {
		return int(t.hdr.fde(i) - t.frame.addr)
	}
	return t.idx[i].off
}

// Find returns the FDE that covers pc, or ErrNoFDE.
func (t *Table) Find(pc uint64) (*FDE, error) {
	// The last FDE that starts at or before pc is the only candidate.
	i := sort.Search(t.Len(), func(i int) bool { return t.start(i) > pc }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%#x: %w", pc, ErrNoFDE)
	}
	fde, err := t.FDE(i)
	if err != nil {
		return nil, err
	}
	if pc >= fde.End {
		return nil, fmt.Errorf("%#x: %w", pc, ErrNoFDE)
	}
	return fde, nil
}

// NextStart returns the start of the first FDE above pc, or the highest
// address if there is none: where code without CFI at pc ends at the
// latest.
func (t *Table) NextStart(pc uint64) uint64 {
	i := sort.Search(t.Len(), func(i int) bool { return t.start(i) > pc })
	if i == t.Len() {
		return ^uint64(0)
	}
	return t.start(i)
}

// Row returns the CFI row in effect at pc.
func (t *Table) Row(pc uint64) (Row, error) {
	fde, err := t.Find(pc)
	if err != nil {
		return Row{}, err
	}
	return rowAt(fde, pc)
}

// RowIn returns the row in effect at pc, which fde must cover.
func RowIn(fde *FDE, pc uint64) (Row, error) {
	if pc < fde.Start || pc >= fde.End {
		return Row{}, fmt.Errorf("%#x is outside the FDE [%#x, %#x)", pc, fde.Start, fde.End)
	}
	return rowAt(fde, pc)
}

// hdrTable is the binary search table of .eh_frame_hdr: pairs of (initial
// location, FDE address), sorted by location.
type hdrTable struct {
	data     []byte
	addr     uint64
	enc      uint8
	entry    int
	count    int
	framePtr uint64
}

func parseHdr(data []byte, addr uint64) (*hdrTable, error) {
	r := &reader{data: data, addr: addr}
	version := r.u8()
	framePtrEnc, countEnc, tableEnc := r.u8(), r.u8(), r.u8()
	if r.err == nil && version != 1 {
		return nil, fmt.Errorf(".eh_frame_hdr: unsupported version %d", version)
	}
	h := &hdrTable{addr: addr, enc: tableEnc}
	h.framePtr = r.pointer(framePtrEnc, addr)
	count := r.pointer(countEnc, addr)
	if r.err != nil {
		return nil, fmt.Errorf(".eh_frame_hdr: %w", r.err)
	}
	// Only fixed-size, datarel entries can be searched in place; other
	// encodings (never seen from GNU ld or lld) fall back to a scan.
	h.entry = map[uint8]int{peDatarel | peSdata4: 8, peDatarel | peUdata4: 8, peDatarel | peSdata8: 16, peDatarel | peUdata8: 16}[tableEnc]
	if countEnc == peOmit || tableEnc == peOmit || h.entry == 0 {
		return h, nil
	}
	if count > uint64(len(data)-r.off)/uint64(h.entry) {
		return nil, fmt.Errorf(".eh_frame_hdr: %d entries do not fit", count)
	}
	h.data = data[r.off:]
	h.count = int(count)
	return h, nil
}

func (h *hdrTable) field(i, half int) uint64 {
	off := i*h.entry + half*h.entry/2
	r := &reader{data: h.data[off : off+h.entry/2]}
	return r.pointer(h.enc, h.addr)
}

func (h *hdrTable) start(i int) uint64 { return h.field(i, 0) }
func (h *hdrTable) fde(i int) uint64   { return h.field(i, 1) }
