// Package syscalls knows the Linux system call ABIs of x86: names and
// numbers for x86_64, i386 and x32, and the audit architecture each reports
// to seccomp.
package syscalls

import (
	"fmt"
	"strings"
)

// Arch is a system call ABI.
type Arch uint8

// The ABIs of an x86_64 kernel.
const (
	X86_64 Arch = iota
	I386
	X32
)

// Arches lists every ABI, in a fixed order.
var Arches = []Arch{X86_64, I386, X32}

// Audit architecture values (linux/audit.h), as seen in seccomp_data.arch.
const (
	AuditArchX86_64 = 0xc000003e
	AuditArchI386   = 0x40000003
)

// X32Bit is set in the number of every x32 system call (__X32_SYSCALL_BIT).
const X32Bit = 0x40000000

// AuditArch is the value of seccomp_data.arch for a call made through a.
func (a Arch) AuditArch() uint32 {
	if a == I386 {
		return AuditArchI386
	}
	return AuditArchX86_64
}

// Is32Bit reports whether the ABI passes 32-bit arguments, so that only the
// low half of each seccomp_data argument carries meaning.
func (a Arch) Is32Bit() bool { return a == I386 }

// String is the name used in syscell policies and flags.
func (a Arch) String() string {
	switch a {
	case X86_64:
		return "x86_64"
	case I386:
		return "x86"
	case X32:
		return "x32"
	}
	return fmt.Sprintf("arch(%d)", uint8(a))
}

// ParseArch accepts syscell's names, Go's and libseccomp's.
func ParseArch(s string) (Arch, error) {
	switch strings.ToLower(strings.TrimPrefix(s, "SCMP_ARCH_")) {
	case "x86_64", "amd64":
		return X86_64, nil
	case "x86", "i386", "386":
		return I386, nil
	case "x32":
		return X32, nil
	}
	return 0, fmt.Errorf("unknown architecture %q (want x86_64, x86 or x32)", s)
}
