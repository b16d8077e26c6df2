package unwind_test

import (
	"testing"

	"github.com/syscell/syscell/unwind"
)

// FuzzTable feeds arbitrary .eh_frame sections to the parser and the
// interpreter: they must fail cleanly, never panic or loop.
func FuzzTable(f *testing.F) {
	f.Add(cieRecord("zR", []byte{0x0c, 0x07, 0x08, 0x90, 0x01}), uint64(0x1005))
	frame := cieRecord("zR", []byte{0x0c, 0x07, 0x08, 0x90, 0x01})
	frame = append(frame, fdeRecord(len(frame), 0, 0x1000, 0x1100, []byte{0x41, 0x0e, 0x10, 0x83, 0x02, 0x0a, 0x0b, 0x0f, 0x02, 0x77, 0x06})...)
	f.Add(frame, uint64(0x1042))
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		table, err := unwind.NewTable(data, ehFrameAddr, nil, 0)
		if err != nil {
			return
		}
		for _, at := range []uint64{pc, pc & 0xffff, 0x1000, 0x1001} {
			row, err := table.Row(at)
			if err != nil {
				continue
			}
			regs := unwind.Regs{unwind.RA: at + 1, unwind.RSP: 0x7000}
			c := unwind.NewCursor(&regs, &unwind.Stack{Addr: 0x7000, Data: data}, finder{table})
			_ = c.NextWithRow(&row)
		}
	})
}
