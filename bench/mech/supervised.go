package mech

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// The supervised mechanism is syscell's own per-library supervisor
// (package cell) deciding a call made from libc's code, the path of every
// call a library makes through libc's stdio or malloc: a notification,
// the thread's stack pointer and the top of its stack read, and the owner
// found in the call-chain cache. The payload (supervisedPayload), started
// by cell.Run, loops on getpid made by the system call instruction of libc's
// syscall() function, which it jumps to (callAt); the policy lets the
// payload's own code make every call and a second compartment every call
// but getpid, so that getpid alone depends on the caller and, from
// libc's code, is supervised.

// callAt calls the code at site with nr in AX (libccall_amd64.s).
func callAt(site, nr uintptr) uintptr

// warmUp is how many calls the payload makes before it times its loop:
// the first has its call chain unwound, which the rest find cached, and
// settle lets the supervisor's threads go idle. The loop then measures
// the steady state a program that makes many supervised calls reaches.
const (
	warmUp = 64
	settle = 300 * time.Millisecond
)

// PayloadName is the supervised mechanisms' payload next to syscell
// (make build): a dynamically linked binary, which syscell is not, so
// that the loader loads the audit library into it and libc's syscall()
// is there to call.
const PayloadName = "syscell-payload"

// supervisedPayload is the binary that plays the supervised payload:
// PayloadName next to this binary where there is one, else this binary
// (a test binary, linked dynamically).
func supervisedPayload() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	return payloadFor(exe)
}

// payloadFor is supervisedPayload for the binary exe.
func payloadFor(exe string) (string, error) {
	if p := filepath.Join(filepath.Dir(exe), PayloadName); fileExists(p) {
		exe = p
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", fmt.Errorf("the supervised payload: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return exe, nil
		}
	}
	return "", fmt.Errorf("%w: %s is statically linked, and there is no %s next to it (make build puts it there)", ErrUnavailable, exe, PayloadName)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// measureSupervised runs one supervised payload.
func measureSupervised(ctx context.Context, req request) (Sample, error) {
	exe, err := supervisedPayload()
	if err != nil {
		return Sample{}, err
	}
	env, err := payloadEnviron(os.Environ(), req)
	if err != nil {
		return Sample{}, err
	}
	var out, errOut bytes.Buffer
	cmd := enforce.Command{Path: exe, Args: []string{exe}, Env: env, Stdout: &out, Stderr: &errOut}
	res, err := cell.Run(ctx, supervisedPolicy(exe), cmd, cell.Options{CallersIn: callersIn(req.Mechanism)})
	if err != nil {
		return Sample{}, fmt.Errorf("%w: %s", err, errOut.Bytes())
	}
	var msg message
	if err := json.Unmarshal(out.Bytes(), &msg); err != nil || msg.Error != "" || res.ExitCode != 0 {
		return Sample{}, fmt.Errorf("payload: exit %d, %q %s: %v", res.ExitCode, msg.Error, errOut.Bytes(), err)
	}
	sample := Sample{LoopNs: msg.LoopNs}
	for _, s := range res.Supervised {
		if s.Syscall == "getpid" && s.Allowed {
			sample.Intercepted += uint64(s.Count)
		}
	}
	sample.Intercepted = max(sample.Intercepted, warmUp) - warmUp
	return sample, nil
}

// callersIn is where the supervisor of mechanism m finds callers: in the
// kernel's snapshots from the start where it can (as root: a program
// that makes many supervised calls loads them soon, run/cell/snapshots.go),
// or in /proc.
func callersIn(m Mechanism) cell.CallersIn {
	switch {
	case m == SupervisedProc:
		return cell.CallersInProc
	case os.Geteuid() == 0:
		return cell.CallersInSnapshots
	}
	return cell.CallersAnywhere
}

// supervisable checks that syscell's audit library is where cell.Run
// looks for it, and that there is a payload it can load it into.
func supervisable() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if _, err := os.Stat(cell.LibraryPath(exe)); err != nil {
		return fmt.Errorf("%w: the audit library (make build puts it next to syscell): %w", ErrUnavailable, err)
	}
	_, err = supervisedPayload()
	return err
}

// supervisedPolicy lets exe's compartment make every call, and another
// compartment, matching no object, every call but getpid.
func supervisedPolicy(exe string) *policy.Policy {
	all := syscalls.Names(syscalls.X86_64)
	var allButGetpid []string
	for _, name := range all {
		if name != "getpid" {
			allButGetpid = append(allButGetpid, name)
		}
	}
	return &policy.Policy{
		Default: policy.ActEPERM, BadArch: policy.ActKillProcess, Arches: []syscalls.Arch{syscalls.X86_64},
		Rules: []policy.Rule{{Syscalls: all, Action: policy.ActAllow}},
		Compartments: []policy.Compartment{
			{Name: "payload", Path: exe, Syscalls: all},
			{Name: "other", Path: "/nonexistent/mech-other", Syscalls: allButGetpid},
		},
	}
}

// supervisedLoop times n getpid calls made from libc's syscall().
func supervisedLoop(n int) (time.Duration, error) {
	site, err := libcSyscallSite()
	if err != nil {
		return 0, err
	}
	for range warmUp {
		callAt(site, unix.SYS_GETPID)
	}
	time.Sleep(settle)
	start := time.Now()
	for range n {
		callAt(site, unix.SYS_GETPID)
	}
	return time.Since(start), nil
}

// libcSyscallSite finds, in this process, the system call instruction of
// libc's syscall() function.
func libcSyscallSite() (uintptr, error) {
	m, err := libcText()
	if err != nil {
		return 0, err
	}
	f, err := elf.Open(m.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return 0, err
	}
	for _, s := range syms {
		if s.Name != "syscall" || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		for _, p := range f.Progs {
			if p.Type != elf.PT_LOAD || s.Value < p.Vaddr || s.Value+s.Size > p.Vaddr+p.Filesz {
				continue
			}
			code := make([]byte, s.Size)
			if _, err := p.ReadAt(code, int64(s.Value-p.Vaddr)); err != nil {
				return 0, err
			}
			i := bytes.Index(code, []byte{0x0f, 0x05})
			off := s.Value - p.Vaddr + p.Off + uint64(i)
			if i < 0 || off < m.offset {
				break
			}
			return uintptr(m.start + off - m.offset), nil
		}
	}
	return 0, errors.New("no system call instruction in libc's syscall()")
}

// mapping is an executable mapping of a file.
type mapping struct {
	start, offset uint64
	path          string
}

// libcText finds libc's executable mapping in /proc/self/maps.
func libcText() (mapping, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return mapping{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.Contains(fields[1], "x") || !strings.HasSuffix(fields[5], "/libc.so.6") {
			continue
		}
		start, err1 := strconv.ParseUint(strings.Split(fields[0], "-")[0], 16, 64)
		off, err2 := strconv.ParseUint(fields[2], 16, 64)
		if err := errors.Join(err1, err2); err != nil {
			return mapping{}, err
		}
		return mapping{start: start, offset: off, path: fields[5]}, nil
	}
	return mapping{}, errors.New("libc.so.6 is not mapped: the binary is linked statically")
}
