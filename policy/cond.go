package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Op compares a 64-bit syscall argument with a constant, unsigned.
type Op uint8

// Comparison operators. MaskedEq holds when arg & Mask == Value.
const (
	Eq Op = iota
	Ne
	Lt
	Le
	Gt
	Ge
	MaskedEq
)

var opNames = [...]string{Eq: "==", Ne: "!=", Lt: "<", Le: "<=", Gt: ">", Ge: ">=", MaskedEq: "&"}

func (o Op) String() string { return opNames[o] }

// MaxArgs is the number of syscall arguments seccomp sees.
const MaxArgs = 6

// Cond is one argument condition: args[Arg] Op Value (with Mask for
// MaskedEq).
type Cond struct {
	Arg   uint8
	Op    Op
	Value uint64
	Mask  uint64
}

// Holds reports whether the condition is true for argument value v. On a
// 32-bit ABI the caller passes width 32: the kernel hands the filter the
// register's 64 bits, but the syscall only uses the low half, so both sides
// are compared modulo 2^32 (as libseccomp does).
func (c Cond) Holds(v uint64, width int) bool {
	val, mask := c.Value, c.Mask
	if width == 32 {
		v, val, mask = uint64(uint32(v)), uint64(uint32(val)), uint64(uint32(mask))
	}
	switch c.Op {
	case Eq:
		return v == val
	case Ne:
		return v != val
	case Lt:
		return v < val
	case Le:
		return v <= val
	case Gt:
		return v > val
	case Ge:
		return v >= val
	case MaskedEq:
		return v&mask == val
	}
	return false
}

// String writes the condition as ParseCond reads it: "arg1 == 0x3" or
// "arg0 & 0xff == 0x1".
func (c Cond) String() string {
	if c.Op == MaskedEq {
		return fmt.Sprintf("arg%d & %#x == %#x", c.Arg, c.Mask, c.Value)
	}
	return fmt.Sprintf("arg%d %s %#x", c.Arg, c.Op, c.Value)
}

// MarshalText writes the form ParseCond reads.
func (c Cond) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a condition.
func (c *Cond) UnmarshalText(b []byte) error {
	cond, err := ParseCond(string(b))
	if err != nil {
		return err
	}
	*c = cond
	return nil
}

// ParseCond reads "argN OP VALUE" or "argN & MASK == VALUE", N from 0 to 5,
// OP one of == != < <= > >=, numbers in decimal, hex (0x) or octal (0o).
func ParseCond(s string) (Cond, error) {
	f := strings.Fields(s)
	if len(f) != 3 && len(f) != 5 {
		return Cond{}, fmt.Errorf("condition %q: want \"argN OP VALUE\" or \"argN & MASK == VALUE\"", s)
	}
	arg, err := parseArgIndex(f[0])
	if err != nil {
		return Cond{}, fmt.Errorf("condition %q: %w", s, err)
	}
	c := Cond{Arg: arg}
	if len(f) == 5 {
		if f[1] != "&" || f[3] != "==" {
			return Cond{}, fmt.Errorf("condition %q: a masked comparison reads \"argN & MASK == VALUE\"", s)
		}
		c.Op = MaskedEq
		if c.Mask, err = parseValue(f[2]); err == nil {
			c.Value, err = parseValue(f[4])
		}
		if err == nil && c.Value&^c.Mask != 0 {
			err = fmt.Errorf("value %#x has bits outside mask %#x, so it can never match", c.Value, c.Mask)
		}
		if err != nil {
			return Cond{}, fmt.Errorf("condition %q: %w", s, err)
		}
		return c, nil
	}
	op := -1
	for i, n := range opNames[:MaskedEq] {
		if n == f[1] {
			op = i
		}
	}
	if op < 0 {
		return Cond{}, fmt.Errorf("condition %q: unknown operator %q (want == != < <= > >= or &)", s, f[1])
	}
	c.Op = Op(op)
	if c.Value, err = parseValue(f[2]); err != nil {
		return Cond{}, fmt.Errorf("condition %q: %w", s, err)
	}
	return c, nil
}

func parseArgIndex(s string) (uint8, error) {
	n, ok := strings.CutPrefix(s, "arg")
	if !ok {
		return 0, fmt.Errorf("%q is not an argument (want arg0 to arg5)", s)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= MaxArgs {
		return 0, fmt.Errorf("bad argument index %q (want arg0 to arg5)", s)
	}
	return uint8(i), nil
}

func parseValue(s string) (uint64, error) {
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("bad value %q", s)
		}
		return uint64(v), nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q (want a 64-bit number)", s)
	}
	return v, nil
}
