package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated reports data that ends in the middle of a field.
var errTruncated = errors.New("truncated")

// reader decodes the little-endian fields of .eh_frame and of DWARF
// expressions. The first error sticks and every later read returns zero,
// so that a parser checks once, at the end of a record.
type reader struct {
	data []byte
	off  int
	// addr is the virtual address of data[0], for pc-relative pointers.
	addr uint64
	err  error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) empty() bool { return r.off >= len(r.data) }

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.data)-r.off {
		r.fail(errTruncated)
		return nil
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8() uint8 {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// cstring reads a NUL-terminated string.
func (r *reader) cstring() string {
	for i := r.off; i < len(r.data); i++ {
		if r.data[i] == 0 {
			s := string(r.data[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(errTruncated)
	return ""
}

// Pointer encodings of .eh_frame (DW_EH_PE_*): the low nibble is the
// format, the high bits say what the value is relative to.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePcrel   = 0x10
	peDatarel = 0x30
	peOmit    = 0xff

	peIndirect = 0x80
)

// pointer reads a pointer in encoding enc. datarel pointers (used by
// .eh_frame_hdr) are relative to dataBase. Indirect pointers would need the
// process's memory and do not occur in the CFI this package reads.
func (r *reader) pointer(enc uint8, dataBase uint64) uint64 {
	if enc == peOmit {
		return 0
	}
	if enc&peIndirect != 0 {
		r.fail(fmt.Errorf("indirect pointer encoding %#x", enc))
		return 0
	}
	fieldAddr := r.addr + uint64(r.off)
	v := r.value(enc & 0x0f)
	switch enc & 0x70 {
	case peAbsptr:
		return v
	case pePcrel:
		return v + fieldAddr
	case peDatarel:
		return v + dataBase
	default:
		r.fail(fmt.Errorf("unsupported pointer encoding %#x", enc))
		return 0
	}
}

// value reads the number part of an encoded pointer, sign-extended where
// the format is signed.
func (r *reader) value(format uint8) uint64 {
	switch format {
	case peAbsptr, peUdata8, peSdata8:
		return r.u64()
	case peUleb128:
		return r.uleb()
	case peUdata2:
		return uint64(r.u16())
	case peUdata4:
		return uint64(r.u32())
	case peSleb128:
		return uint64(r.sleb())
	case peSdata2:
		return uint64(int64(int16(r.u16())))
	case peSdata4:
		return uint64(int64(int32(r.u32())))
	default:
		r.fail(fmt.Errorf("unsupported pointer format %#x", format))
		return 0
	}
}
