package iouring

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Params is struct io_uring_params: what io_uring_setup reads, and
// writes back once the ring is set up.
type Params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	// SQOff and CQOff are struct io_sqring_offsets and io_cqring_offsets,
	// ten 32-bit words each.
	SQOff, CQOff [10]uint32
}

// ParamsSize is the size of struct io_uring_params.
const ParamsSize = int(unsafe.Sizeof(Params{}))

// Setup flags (IORING_SETUP_*).
const (
	setupIOPoll        = 1 << 0
	setupSQPoll        = 1 << 1
	setupSQAff         = 1 << 2
	setupCQSize        = 1 << 3
	setupClamp         = 1 << 4
	setupAttachWQ      = 1 << 5
	setupRDisabled     = 1 << 6
	setupSubmitAll     = 1 << 7
	setupCoopTaskrun   = 1 << 8
	setupTaskrunFlag   = 1 << 9
	setupSQE128        = 1 << 10
	setupCQE32         = 1 << 11
	setupSingleIssuer  = 1 << 12
	setupDeferTaskrun  = 1 << 13
	setupNoMmap        = 1 << 14
	setupRegisteredFD  = 1 << 15
	setupNoSQArray     = 1 << 16
	setupHybridIOPoll  = 1 << 17
	setupCQEMixed      = 1 << 18
	setupSQEMixed      = 1 << 19
	setupForAnother    = setupIOPoll | setupCQSize | setupClamp | setupSubmitAll | setupCoopTaskrun | setupTaskrunFlag | setupSQE128 | setupCQE32 | setupNoSQArray | setupHybridIOPoll | setupCQEMixed | setupSQEMixed
	registerRestrict   = 11
	registerEnable     = 12
	restrictRegisterOp = 0
	restrictSQEOp      = 1
	restrictSQEFlags   = 2
)

// refused says why each flag a ring set up for another process cannot
// have: the kernel ties it to the process that sets the ring up.
var refused = []struct {
	flag uint32
	why  string
}{
	{setupSQPoll, "SQPOLL: the kernel's polling thread would be the supervisor's"},
	{setupSQAff, "SQ_AFF: it places a polling thread"},
	{setupAttachWQ, "ATTACH_WQ: it shares another ring's workers"},
	{setupRDisabled, "R_DISABLED: the ring comes restricted and enabled"},
	{setupSingleIssuer, "SINGLE_ISSUER: the issuer would be the supervisor"},
	{setupDeferTaskrun, "DEFER_TASKRUN: it needs SINGLE_ISSUER"},
	{setupNoMmap, "NO_MMAP: its rings would be the supervisor's memory"},
	{setupRegisteredFD, "REGISTERED_FD_ONLY: the ring would be registered with the supervisor"},
}

// FlagsError is why a ring cannot be set up for another process with the
// flags asked for.
type FlagsError struct {
	Flags uint32
}

func (e *FlagsError) Error() string {
	var why []string
	for _, r := range refused {
		if e.Flags&r.flag != 0 {
			why = append(why, r.why)
		}
	}
	if rest := e.Flags &^ setupForAnother; len(why) == 0 && rest != 0 {
		why = append(why, fmt.Sprintf("unknown flags %#x", rest))
	}
	return "io_uring setup flags " + strings.Join(why, "; ")
}

// restriction is struct io_uring_restriction.
type restriction struct {
	opcode uint16
	arg    uint8
	resv   uint8
	resv2  [3]uint32
}

// Restricted sets up a ring, as io_uring_setup(entries, p) would, whose
// submissions may make the operations ops alone, with any flags, and
// which may be registered anything but other restrictions; on success p
// holds what the kernel wrote back. The ring is the caller's; it is
// meant to be handed to the process that asked for it, which then uses
// it as its own: its submissions run in that process. A ring whose flags
// tie it to the process that sets it up is refused with a *FlagsError;
// the kernel's refusals are unix.Errno.
func Restricted(entries uint32, p *Params, ops []Op) (int, error) {
	if err := Check(p); err != nil {
		return -1, err
	}
	q := *p
	q.Flags |= setupRDisabled
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&q)), 0)
	if errno != 0 {
		return -1, errno
	}
	res := restrictions(ops)
	if err := register(int(fd), registerRestrict, unsafe.Pointer(&res[0]), len(res)); err != nil {
		unix.Close(int(fd))
		return -1, err
	}
	if err := register(int(fd), registerEnable, nil, 0); err != nil {
		unix.Close(int(fd))
		return -1, err
	}
	q.Flags = p.Flags
	*p = q
	return int(fd), nil
}

// Check says whether a ring with p's flags can be set up for another
// process: a *FlagsError where it cannot.
func Check(p *Params) error {
	if p.Flags&^setupForAnother != 0 {
		return &FlagsError{Flags: p.Flags &^ setupForAnother}
	}
	return nil
}

// restrictions allows ops, every submission flag, and every registration
// but restrictions and enabling, which a restricted ring refuses anyway.
func restrictions(ops []Op) []restriction {
	res := []restriction{{opcode: restrictSQEFlags, arg: 0xff}}
	for _, op := range ops {
		res = append(res, restriction{opcode: restrictSQEOp, arg: uint8(op)})
	}
	for op := range registerLast() {
		if op != registerRestrict && op != registerEnable {
			res = append(res, restriction{opcode: restrictRegisterOp, arg: uint8(op)})
		}
	}
	return res
}

func register(fd int, opcode uintptr, arg unsafe.Pointer, n int) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), opcode, uintptr(arg), uintptr(n), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// registerLast is how many registration operations the running kernel
// has (IORING_REGISTER_LAST): the first number a restriction refuses
// (EINVAL), found on a ring of its own, once.
var registerLast = sync.OnceValue(func() int {
	p := Params{Flags: setupRDisabled}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return 0
	}
	defer unix.Close(int(fd))
	for last := 255; last > 0; last-- {
		r := restriction{opcode: restrictRegisterOp, arg: uint8(last - 1)}
		if register(int(fd), registerRestrict, unsafe.Pointer(&r), 1) == nil {
			return last
		}
	}
	return 0
})
