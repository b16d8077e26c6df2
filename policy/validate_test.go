package policy

import (
	"errors"
	"reflect"
	"testing"
)

func TestValidate(t *testing.T) {
	at := func(line int) Pos { return Pos{File: "p.toml", Line: line} }
	tests := []struct {
		name string
		p    Policy
		want string // "" for valid
	}{
		{"valid", Policy{
			Rules: []Rule{
				{Syscalls: []string{"read", "chown32"}, Action: ActAllow},
				{Syscalls: []string{"read"}, Action: ActEPERM, Conds: []Cond{{Arg: 0, Op: Eq, Value: 3}}},
			},
			Compartments: []Compartment{{Name: "a", Syscalls: []string{"read"}}, {Name: "b"}},
		}, ""},
		{"same action twice", Policy{Rules: []Rule{
			{Syscalls: []string{"read"}, Action: ActAllow},
			{Syscalls: []string{"read"}, Action: ActAllow},
		}}, ""},
		{"no syscalls", Policy{Rules: []Rule{{Action: ActAllow, Pos: at(4)}}},
			"p.toml:4: rule has no syscalls"},
		{"unknown syscall", Policy{Rules: []Rule{{Syscalls: []string{"read", "mkdri"}, Pos: at(4)}}},
			`p.toml:4: unknown syscall "mkdri"`},
		{"argument index", Policy{Rules: []Rule{{Syscalls: []string{"read"}, Conds: []Cond{{Arg: 6}}, Pos: at(4)}}},
			`p.toml:4: condition "arg6 == 0x0": bad argument index "arg6" (want arg0 to arg5)`},
		{"operator", Policy{Rules: []Rule{{Syscalls: []string{"read"}, Conds: []Cond{{Arg: 1, Op: MaskedEq + 1}}, Pos: at(4)}}},
			`p.toml:4: condition on arg1: unknown operator 7`},
		{"mask", Policy{Rules: []Rule{{Syscalls: []string{"read"}, Conds: []Cond{{Op: MaskedEq, Mask: 1, Value: 2}}, Pos: at(4)}}},
			`p.toml:4: condition "arg0 & 0x1 == 0x2": value 0x2 has bits outside mask 0x1, so it can never match`},
		{"conflict, conditions reordered and repeated", Policy{Rules: []Rule{
			{Syscalls: []string{"socket"}, Action: ActAllow, Conds: []Cond{{Op: Ne, Value: 38}, {Arg: 1, Value: 1}}, Pos: at(2)},
			{Syscalls: []string{"socket"}, Action: ActAllow, Pos: at(5)},
			{Syscalls: []string{"socket"}, Action: ActEPERM, Conds: []Cond{{Arg: 1, Value: 1}, {Op: Ne, Value: 38}, {Arg: 1, Value: 1}}, Pos: at(9)},
		}}, `p.toml:9: conflicting actions for "socket": errno(1) here, allow at line 2, under the same conditions`},
		{"conflict across files", Policy{Rules: []Rule{
			{Syscalls: []string{"read"}, Action: ActAllow, Pos: Pos{File: "a.toml", Line: 2}},
			{Syscalls: []string{"read"}, Action: ActEPERM, Pos: at(9)},
		}}, `p.toml:9: conflicting actions for "read": errno(1) here, allow at a.toml:2, under the same conditions`},
		{"compartment without name", Policy{Compartments: []Compartment{{Pos: at(3)}}},
			"p.toml:3: compartment has no name"},
		{"duplicate compartment", Policy{Compartments: []Compartment{{Name: "a", Pos: at(3)}, {Name: "a", Pos: at(7)}}},
			`p.toml:7: duplicate compartment "a" (first at line 3)`},
		{"compartment syscall", Policy{Compartments: []Compartment{{Name: "a", Syscalls: []string{"getpdi"}, Pos: at(3)}}},
			`p.toml:3: compartment "a": unknown syscall "getpdi"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate = %v, want nil", err)
				}
				return
			}
			var perr *Error
			if !errors.As(err, &perr) || err.Error() != tt.want {
				t.Errorf("Validate = %v, want *Error %s", err, tt.want)
			}
		})
	}
}

func TestUnion(t *testing.T) {
	p := &Policy{Compartments: []Compartment{
		{Name: "a", Syscalls: []string{"write", "getpid"}},
		{Name: "b"},
		{Name: "c", Syscalls: []string{"read", "getpid"}},
	}}
	if got, want := p.Union(), []string{"getpid", "read", "write"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Union = %v, want %v", got, want)
	}
	if got := (&Policy{}).Union(); len(got) != 0 {
		t.Errorf("Union of no compartments = %v, want none", got)
	}
}

func TestErrorAs(t *testing.T) {
	_, err := Parse("p.toml", []byte("version = 1\ndefault = \"allow\"\nbad = 1\n"))
	wrapped := errors.Join(errors.New("context"), err)
	var perr *Error
	if !errors.As(wrapped, &perr) {
		t.Fatalf("errors.As(%v) found no *Error", wrapped)
	}
	if want := (Pos{File: "p.toml", Line: 3}); perr.Pos != want {
		t.Errorf("Pos = %v, want %v", perr.Pos, want)
	}
}
