// A cut-down x/sys zsysnum file: out of order, with an alias, a name that
// starts with an underscore and a constant that is not a syscall.

//go:build amd64 && linux

package unix

const (
	SYS_WRITE      = 1
	SYS_READ       = 0
	SYS__SYSCTL    = 156
	SYS_NEWFSTATAT = 262
	SYS_FSTATAT    = 262
	NOT_A_SYSCALL  = 7
)

const SYS_MSEAL = 0x1ce
