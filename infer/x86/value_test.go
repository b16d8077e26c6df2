package x86

import "testing"

func TestJoin(t *testing.T) {
	many := Value{Kind: Const}
	for i := range MaxConsts {
		many.Consts = append(many.Consts, uint64(i))
	}
	tests := []struct {
		name string
		a, b Value
		want Value
	}{
		{"equal constants", ConstOf(1), ConstOf(1), ConstOf(1)},
		{"two constants", ConstOf(2), ConstOf(1), Value{Kind: Const, Consts: []uint64{1, 2}}},
		{"too many constants", many, ConstOf(99), Value{}},
		{"same parameter", ParamOf(0), ParamOf(0), ParamOf(0)},
		{"two parameters", ParamOf(0), ParamOf(1), Value{}},
		{"parameter and constant", ParamOf(0), ConstOf(1), Value{}},
		{"same slot", SlotOf(8), SlotOf(8), SlotOf(8)},
		{"unknown absorbs", Value{}, ConstOf(1), Value{}},
		{"frame addresses", StackOf(-8), StackOf(-16), Value{}},
		{"a parameter and its bits", ParamOf(1), ParamOf(1).masked(0x2000, true), bitsOf(1, ^uint64(0x2000), 0, 0x2000)},
		{"bits of two parameters", ParamOf(1).masked(3, false), ParamOf(2).masked(3, false), Value{}},
		{"bits set and cleared", ParamOf(1).masked(4, true), ParamOf(1).masked(^uint64(4), false), bitsOf(1, ^uint64(4), 0, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Join(tt.b); !got.Equal(tt.want) {
				t.Errorf("%v join %v = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestFieldPath(t *testing.T) {
	f := FieldOf(ParamOf(0), 0xd8)
	g := FieldOf(f, 0x38)
	if g.Kind != Field || !g.Base().Equal(ParamOf(0)) || len(g.Path()) != 2 || g.Offset() != 0x38 {
		t.Fatalf("FieldOf(FieldOf(rdi, 0xd8), 0x38) = %v", g)
	}
	if !g.Parent().Equal(f) || !f.Parent().Equal(ParamOf(0)) {
		t.Errorf("parents of %v: %v, %v", g, g.Parent(), f.Parent())
	}
	deep := g
	for range maxPath {
		deep = FieldOf(deep, 8)
	}
	if deep.Kind != Unknown {
		t.Errorf("a path longer than %d pointers is %v, want unknown", maxPath, deep)
	}
	if s := FieldOf(SlotOf(0x1000), 16); !s.Base().Equal(SlotOf(0x1000)) {
		t.Errorf("base of %v = %v", s, s.Base())
	}
	if v := FieldOf(ConstOf(1), 0); v.Kind != Unknown {
		t.Errorf("a field of a constant is %v, want unknown (loads of constant addresses are slots)", v)
	}
}

func TestGuardThrough(t *testing.T) {
	tilde := Guard{Arg: 1, Mask: 0x5000}
	tests := []struct {
		name  string
		arg   Value
		want  Guard
		never bool
	}{
		{"constant without the bits", ConstOf(0x5), Guard{}, true},
		{"constant with one", ConstOf(0x1000), Guard{}, false},
		{"one of the constants has one", Value{Kind: Const, Consts: []uint64{0, 0x4000}}, Guard{}, false},
		{"the caller's parameter", ParamOf(3), Guard{Arg: 3, Mask: 0x5000}, false},
		{"its bits, some kept", ParamOf(0).masked(0x1241, false), Guard{Arg: 0, Mask: 0x1000}, false},
		{"its bits, none kept", ParamOf(0).masked(0x241, false), Guard{}, true},
		{"its bits, one set", ParamOf(0).masked(0x4000, true), Guard{}, false},
		{"its bits, one either", joinBits(ParamOf(0), ParamOf(0).masked(0x1000, true)), Guard{}, false},
		{"unknown", Value{}, Guard{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, never := tilde.Through(tt.arg)
			if h != tt.want || ok != (tt.want.Mask != 0) || never != tt.never {
				t.Errorf("Through(%v) = %v, %v, never %v; want %v, never %v", tt.arg, h, ok, never, tt.want, tt.never)
			}
		})
	}
}

func TestTested(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		mask uint64
		want Guard
	}{
		{"a parameter", ParamOf(1), 0x1000, Guard{Arg: 1, Mask: 0x1000}},
		{"its bits kept", ParamOf(1).masked(0xff, false), 0x1f0, Guard{Arg: 1, Mask: 0xf0}},
		{"a bit it sets", ParamOf(1).masked(0x10, true), 0x10, Guard{}},
		{"a bit it may set", joinBits(ParamOf(1), ParamOf(1).masked(0x10, true)), 0x30, Guard{}},
		{"a constant", ConstOf(3), 1, Guard{}},
		{"unknown", Value{}, 1, Guard{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.tested(tt.mask); got != tt.want {
				t.Errorf("%v tested with %#x = %v, want %v", tt.v, tt.mask, got, tt.want)
			}
		})
	}
}
