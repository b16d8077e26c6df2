package bpf

import (
	"encoding/binary"
	"fmt"
)

// InstructionSize is sizeof(struct sock_filter): u16 code, u8 jt, u8 jf,
// u32 k.
const InstructionSize = 8

// Encode lays prog out as the array of struct sock_filter that the kernel
// reads and that libseccomp's seccomp_export_bpf writes. The kernel reads
// host byte order; syscell's targets are little-endian, so the encoding is.
func Encode(prog []Instruction) []byte {
	b := make([]byte, 0, len(prog)*InstructionSize)
	for _, ins := range prog {
		b = binary.LittleEndian.AppendUint16(b, ins.Op)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.LittleEndian.AppendUint32(b, ins.K)
	}
	return b
}

// Decode reads what Encode writes. It does not validate the program.
func Decode(b []byte) ([]Instruction, error) {
	if len(b)%InstructionSize != 0 {
		return nil, fmt.Errorf("bpf: %d bytes are not a whole number of %d-byte instructions", len(b), InstructionSize)
	}
	prog := make([]Instruction, len(b)/InstructionSize)
	for i := range prog {
		r := b[i*InstructionSize:]
		prog[i] = Instruction{
			Op: binary.LittleEndian.Uint16(r),
			Jt: r[2],
			Jf: r[3],
			K:  binary.LittleEndian.Uint32(r[4:]),
		}
	}
	return prog, nil
}
