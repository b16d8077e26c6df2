package bpf

// Offsets of the fields of struct seccomp_data, the input of every seccomp
// filter.
const (
	OffsetNr     = 0
	OffsetArch   = 4
	OffsetIPLow  = 8
	OffsetIPHigh = 12
	OffsetArgs   = 16
	// SeccompDataSize is sizeof(struct seccomp_data).
	SeccompDataSize = 64
)

// ArgLow gives the offset of the low half of argument i on a
// little-endian machine.
func ArgLow(i int) uint32 { return OffsetArgs + uint32(i)*8 }

// ArgHigh gives the offset of the high half of argument i on a
// little-endian machine.
func ArgHigh(i int) uint32 { return OffsetArgs + uint32(i)*8 + 4 }

// SeccompData is struct seccomp_data: what the kernel hands a filter.
type SeccompData struct {
	Nr   uint32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// Word returns the 32-bit word at byte offset off, as a BPF_LD|BPF_W|BPF_ABS
// load would see it, and false when off is not an aligned offset inside the
// structure.
func (d *SeccompData) Word(off uint32) (uint32, bool) {
	if off%4 != 0 || off >= SeccompDataSize {
		return 0, false
	}
	switch {
	case off == OffsetNr:
		return d.Nr, true
	case off == OffsetArch:
		return d.Arch, true
	case off < OffsetArgs:
		return half(d.IP, off-OffsetIPLow), true
	default:
		a := (off - OffsetArgs) / 8
		return half(d.Args[a], (off-OffsetArgs)%8), true
	}
}

func half(v uint64, byteOff uint32) uint32 {
	if byteOff == 0 {
		return uint32(v)
	}
	return uint32(v >> 32)
}
