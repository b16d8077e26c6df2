package infer

import (
	"slices"
	"testing"

	"github.com/syscell/syscell/infer/x86"
)

// nrs is the set of the numbers given.
func nrs(numbers ...uint64) nrSet {
	var s nrSet
	for _, nr := range numbers {
		s.add(nr)
	}
	return s
}

// guards are the guards of a summary's parts, in order.
func guards(s *summary) []x86.Guard {
	var out []x86.Guard
	for _, g := range s.guarded {
		out = append(out, g.guard)
	}
	return out
}

func TestAddGuarded(t *testing.T) {
	many := make([]x86.Guard, maxGuarded+1)
	for i := range many {
		many[i] = x86.Guard{Arg: 1, Mask: 1 << i}
	}
	tests := []struct {
		name  string
		add   []x86.Guard
		kept  []x86.Guard
		plain bool
	}{
		{"one", many[:1], many[:1], false},
		{"the same twice", []x86.Guard{many[0], many[0]}, many[:1], false},
		{"sorted by argument, then mask", []x86.Guard{{Arg: 2, Mask: 1}, many[1], many[0]}, []x86.Guard{many[0], many[1], {Arg: 2, Mask: 1}}, false},
		{"beyond the bound the greatest is unconditional", many, many[:maxGuarded], true},
		{"whichever comes first", reversed(many), many[:maxGuarded], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s summary
			for i, g := range tt.add {
				calls := nrs(uint64(i))
				s.addGuarded(g, &calls, false, 0)
			}
			if got := guards(&s); !slices.Equal(got, tt.kept) {
				t.Errorf("guards %v, want %v", got, tt.kept)
			}
			if s.nrs != (nrSet{}) != tt.plain {
				t.Errorf("unconditional calls %v, want some: %v", callsOf(s).Names(), tt.plain)
			}
			if flat := s.flat(); flat.nrs != nrs(seq(len(tt.add))...) || flat.guarded != nil {
				t.Errorf("flat %v, want every call made unconditional", callsOf(flat).Names())
			}
		})
	}
}

// seq is 0 to n-1.
func seq(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

func reversed(gs []x86.Guard) []x86.Guard {
	out := slices.Clone(gs)
	slices.Reverse(out)
	return out
}

// TestAbsorbGuarded checks what a caller makes of a callee's calls under
// a guard on its second argument (rsi & 0x5000, glob's GLOB_TILDE |
// GLOB_TILDE_CHECK), by the value it passes there.
func TestAbsorbGuarded(t *testing.T) {
	tilde := x86.Guard{Arg: 1, Mask: 0x5000}
	callee := summary{guarded: []guardedCalls{{guard: tilde, nrs: nrs(37)}}}
	s := &solver{linker: &linker{nodes: []node{{}}}}
	tests := []struct {
		name string
		arg  x86.Value
		want []x86.Guard
		made bool
	}{
		{"constants without the bits", x86.ConstOf(0x5), nil, false},
		{"a constant with one", x86.ConstOf(0x1000), nil, true},
		{"the caller's argument", x86.ParamOf(2), []x86.Guard{{Arg: 2, Mask: 0x5000}}, false},
		{"some of its bits", x86.Value{Kind: x86.Bits, Arg: 0, Consts: []uint64{0x1241, 0, 0}}, []x86.Guard{{Arg: 0, Mask: 0x1000}}, false},
		{"none of its bits", x86.Value{Kind: x86.Bits, Arg: 0, Consts: []uint64{0x241, 0, 0}}, nil, false},
		{"unknown", x86.Value{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &x86.Call{}
			c.Args[1] = tt.arg
			var sum summary
			s.absorb(0, &sum, &callee, c)
			if got := guards(&sum); !slices.Equal(got, tt.want) {
				t.Errorf("guards %v, want %v", got, tt.want)
			}
			if made := sum.nrs == nrs(37); made != tt.made {
				t.Errorf("the call is unconditional: %v, want %v", made, tt.made)
			}
		})
	}
	var sum summary
	s.absorb(0, &sum, &callee, nil)
	if sum.nrs != nrs(37) {
		t.Errorf("a callback's guarded call is %v, want unconditional", callsOf(sum).Names())
	}
}
