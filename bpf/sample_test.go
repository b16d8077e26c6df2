package bpf

import "testing"

func TestSample(t *testing.T) {
	p := benchProgram(&testing.B{})
	t.Logf("\n%s\n--->\n%s", Disassemble(p), Disassemble(Optimize(p)))
}
