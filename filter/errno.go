package filter

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
)

// The errnos DistinctErrnos hands out, FirstDistinctErrno and up. No system
// call returns an errno in this range: the largest errno Linux defines is
// below 600. The top is set by two caps. The kernel caps the data of
// SECCOMP_RET_ERRNO at MAX_ERRNO, 4095, so that larger values all arrive as
// 4095; and the system call stubs of Go's runtime, behind RawSyscall6, take
// only -4094 to -1 for errors, so that -4095 comes back as a successful
// return value (libc, which also takes -4095, would disagree). 4094 is thus
// the largest errno that arrives intact and reads as an errno.
//
// A program the kernel accepts has at most 4096 instructions, of which at
// most 2730 are reachable returns (each needs a jump or a fall-through into
// it), so the 3071 errnos of the range always suffice.
const (
	FirstDistinctErrno = 1024
	LastDistinctErrno  = 4094
)

// DistinctErrnos rewrites every reachable "ret K" whose action stops the
// system call into "ret ERRNO(e)", with one errno e per distinct K, from
// FirstDistinctErrno up in order of first appearance, and returns the
// program with the errno given to each K. ALLOW and LOG, which let the call
// run, stay as they are.
//
// Under the rewritten program nothing kills, traps or waits for a tracer or
// supervisor, yet the errno of every stopped call tells which return of the
// original program stopped it (see Verdict). That is how children run
// arbitrary programs and report on them. "ret A", whose action is computed
// at run time, is left unchanged; syscell's compiler never emits it.
func DistinctErrnos(prog []bpf.Instruction) (rewritten []bpf.Instruction, errnoOf map[uint32]uint16) {
	rewritten = append([]bpf.Instruction(nil), prog...)
	errnoOf = make(map[uint32]uint16)
	for i, live := range reachable(prog) {
		ins := prog[i]
		if !live || ins.Op != bpf.ClassRet|bpf.RetK || lets(ins.K) {
			continue
		}
		e, ok := errnoOf[ins.K]
		if !ok {
			e = FirstDistinctErrno + uint16(len(errnoOf))
			errnoOf[ins.K] = e
		}
		rewritten[i] = bpf.Ret(unix.SECCOMP_RET_ERRNO | uint32(e))
	}
	return rewritten, errnoOf
}

// Verdict tells what the original program decided for a call made under its
// DistinctErrnos rewrite: the return value that stopped the call, or
// SECCOMP_RET_ALLOW when the call ran (the original allowed or logged it;
// any errno it returned is its own).
func Verdict(res Result, errnoOf map[uint32]uint16) uint32 {
	if res.Errno < FirstDistinctErrno || res.Errno > LastDistinctErrno {
		return unix.SECCOMP_RET_ALLOW
	}
	for ret, e := range errnoOf {
		if syscall.Errno(e) == res.Errno {
			return ret
		}
	}
	return unix.SECCOMP_RET_ALLOW
}

// lets reports whether the kernel runs a call its filter answers with ret.
func lets(ret uint32) bool {
	action := ret & unix.SECCOMP_RET_ACTION_FULL
	return action == unix.SECCOMP_RET_ALLOW || action == unix.SECCOMP_RET_LOG
}

// reachable marks the instructions that some path from the first one
// reaches. cBPF jumps only forward, so one pass in order sees every
// predecessor of an instruction before the instruction itself.
func reachable(prog []bpf.Instruction) []bool {
	live := make([]bool, len(prog))
	if len(prog) == 0 {
		return live
	}
	live[0] = true
	for i, ins := range prog {
		if !live[i] {
			continue
		}
		for _, next := range successors(i, ins) {
			if next < len(prog) {
				live[next] = true
			}
		}
	}
	return live
}

// successors lists where execution goes after instruction i.
func successors(i int, ins bpf.Instruction) []int {
	switch {
	case ins.IsReturn():
		return nil
	case ins.IsConditionalJump():
		return []int{i + 1 + int(ins.Jt), i + 1 + int(ins.Jf)}
	case ins.Class() == bpf.ClassJmp:
		return []int{i + 1 + int(ins.K)}
	}
	return []int{i + 1}
}
