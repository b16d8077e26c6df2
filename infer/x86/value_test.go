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
