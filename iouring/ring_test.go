package iouring

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Op
		ok   bool
	}{{"nop", 0, true}, {"mkdirat", 37, true}, {"pipe", 62, true}, {"uring_cmd128", 64, true}, {"mkdir", 0, false}} {
		op, ok := Lookup(tc.name)
		if op != tc.op || ok != tc.ok {
			t.Errorf("Lookup(%q) = %d, %t; want %d, %t", tc.name, op, ok, tc.op, tc.ok)
		}
		if ok && op.String() != tc.name {
			t.Errorf("Op(%d).String() = %q, want %q", op, op.String(), tc.name)
		}
	}
	if got := Op(200).String(); got != "op200" {
		t.Errorf("Op(200).String() = %q", got)
	}
}

// ring is a ring's queues mapped into the test, enough to submit one
// entry at a time and read its completion.
type ring struct {
	fd           int
	sq, cq, sqes []byte
	p            Params
}

func mapRing(t *testing.T, fd int, p Params) *ring {
	t.Helper()
	r := &ring{fd: fd, p: p}
	var err error
	mmap := func(off int64, size int) []byte {
		b, e := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if e != nil {
			err = e
		}
		return b
	}
	r.sq = mmap(0, int(p.SQOff[6]+p.SQEntries*4))
	r.cq = mmap(0x8000000, int(p.CQOff[5]+p.CQEntries*16))
	r.sqes = mmap(0x10000000, int(p.SQEntries*64))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *ring) word(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// submit submits one entry, filled by fill, waits for its completion
// and returns its result.
func (r *ring) submit(t *testing.T, fill func(sqe []byte)) int32 {
	t.Helper()
	tail := atomic.LoadUint32(r.word(r.sq, r.p.SQOff[1]))
	i := tail & *r.word(r.sq, r.p.SQOff[2])
	sqe := r.sqes[i*64 : i*64+64]
	clear(sqe)
	fill(sqe)
	*r.word(r.sq, r.p.SQOff[6]+4*i) = i
	atomic.StoreUint32(r.word(r.sq, r.p.SQOff[1]), tail+1)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 1, 1, 0, 0); errno != 0 {
		t.Fatalf("io_uring_enter: %v", errno)
	}
	head := atomic.LoadUint32(r.word(r.cq, r.p.CQOff[0]))
	if head == atomic.LoadUint32(r.word(r.cq, r.p.CQOff[1])) {
		t.Fatal("no completion")
	}
	cqe := r.cq[r.p.CQOff[5]+16*(head&*r.word(r.cq, r.p.CQOff[2])):]
	atomic.StoreUint32(r.word(r.cq, r.p.CQOff[0]), head+1)
	return *(*int32)(unsafe.Pointer(&cqe[8]))
}

// TestRestricted sets up a ring that may make nops alone, and submits a
// nop and a mkdirat: the kernel refuses the second (EACCES) and makes no
// directory. Nor may the ring be restricted anew.
func TestRestricted(t *testing.T) {
	p := Params{}
	fd, err := Restricted(4, &p, []Op{0})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("SKIPPED: this kernel does not let the test set up io_uring rings: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if p.SQEntries != 4 || p.Flags != 0 {
		t.Errorf("params written back: %+v", p)
	}
	r := mapRing(t, fd, p)
	if res := r.submit(t, func([]byte) {}); res != 0 {
		t.Errorf("nop: %d, want 0", res)
	}
	dir := filepath.Join(t.TempDir(), "made")
	path, err := unix.BytePtrFromString(dir)
	if err != nil {
		t.Fatal(err)
	}
	mkdirat, _ := Lookup("mkdirat")
	res := r.submit(t, func(sqe []byte) {
		sqe[0] = byte(mkdirat)
		*(*int32)(unsafe.Pointer(&sqe[4])) = unix.AT_FDCWD
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(path)))
		*(*uint32)(unsafe.Pointer(&sqe[24])) = 0o700
	})
	if res != -int32(unix.EACCES) {
		t.Errorf("mkdirat: %d, want %d", res, -int32(unix.EACCES))
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want it absent", dir, err)
	}
	if err := register(fd, registerRestrict, nil, 0); !errors.Is(err, unix.EACCES) {
		t.Errorf("restrict again: %v, want EACCES", err)
	}
}

// TestRestrictedRefuses: flags that tie a ring to the process that sets
// it up are refused, each with its reason.
func TestRestrictedRefuses(t *testing.T) {
	for _, tc := range []struct {
		flags uint32
		want  string
	}{{setupSQPoll, "SQPOLL"}, {setupSingleIssuer | setupDeferTaskrun, "DEFER_TASKRUN"}, {1 << 30, "unknown flags 0x40000000"}} {
		p := Params{Flags: tc.flags}
		_, err := Restricted(4, &p, nil)
		var fe *FlagsError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flags %#x: %v, want a FlagsError with %q", tc.flags, err, tc.want)
		}
	}
}
