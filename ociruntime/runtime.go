package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/supervisor"
)

// delegates are the runtimes the shim hands containers to, in the order
// it looks for them.
var delegates = []string{"runc", "crun"}

// runtime is one invocation of the shim.
type runtime struct {
	inv      *invocation
	delegate string
	dirs     supervisor.Dirs
	stderr   io.Writer
}

// Main runs the OCI runtime command line args (without the program's
// name) and returns its exit status. Commands that ask nothing of
// syscell become the delegate: Main does not return from them.
func Main(args []string, stderr io.Writer) int {
	r, err := newRuntime(args, stderr)
	if err == nil {
		err = r.dispatch()
	}
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	}
	r.fail(err)
	return 1
}

// exitStatus is the delegate's own status, passed on.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

func newRuntime(args []string, stderr io.Writer) (*runtime, error) {
	r := &runtime{stderr: stderr, dirs: supervisor.DefaultDirs()}
	inv, err := parseInvocation(args)
	if err != nil {
		return r, err
	}
	r.inv = inv
	for flag, dir := range map[string]*string{flagDir: &r.dirs.State, flagPolicyDir: &r.dirs.PolicyDir, flagRecordDir: &r.dirs.RecordDir} {
		if v := inv.own[flag]; v != "" {
			*dir = v
		}
	}
	r.delegate, err = findDelegate(inv.own[flagDelegate])
	return r, err
}

// findDelegate finds the runtime named (a name or a path), or the first
// of delegates installed. A container engine may call the shim with a
// short PATH: /usr/sbin and /usr/bin are searched too.
func findDelegate(name string) (string, error) {
	names := delegates
	if name != "" {
		names = []string{name}
	}
	for _, n := range names {
		if strings.Contains(n, "/") {
			return n, nil
		}
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("no OCI runtime to hand containers to: none of %s is installed (--%s names one)", strings.Join(names, ", "), flagDelegate)
}

// dispatch runs the command.
func (r *runtime) dispatch() error {
	switch r.inv.command {
	case "create":
		return r.create(r.inv.args)
	case "run":
		return r.run(r.inv.args)
	case "exec":
		return r.exec(r.inv.args)
	case "delete":
		return r.delete(r.inv.args)
	case "start":
		return r.start(r.inv.args)
	}
	return r.become(r.inv.command, r.inv.args...)
}

// delegateArgs is the delegate's command line for command.
func (r *runtime) delegateArgs(command string, args []string) []string {
	out := append([]string{r.delegate}, r.inv.globals...)
	if command != "" {
		out = append(out, command)
	}
	return append(out, args...)
}

// become executes the delegate in place of the shim, with the same
// descriptors, environment and process id: for the caller, the delegate
// ran the command.
func (r *runtime) become(command string, args ...string) error {
	argv := r.delegateArgs(command, args)
	err := unix.Exec(r.delegate, argv, os.Environ())
	return fmt.Errorf("execute %s: %w", r.delegate, err)
}

// delegateRun runs the delegate as a child with every descriptor the
// shim was given (the standard streams, a console socket, descriptors
// to preserve), and returns its exit status.
func (r *runtime) delegateRun(command string, args ...string) (int, error) {
	argv := r.delegateArgs(command, args)
	files, err := inheritedFiles()
	if err != nil {
		return 0, err
	}
	p, err := os.StartProcess(r.delegate, argv, &os.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", r.delegate, err)
	}
	state, err := p.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait for %s: %w", r.delegate, err)
	}
	return state.ExitCode(), nil
}

// inherited are the descriptors the shim was given, found once and kept:
// a second *os.File for a descriptor would close it when collected.
var inherited []*os.File

// inheritedFiles are the descriptors the shim was given, at their
// numbers: the standard streams, and those without close-on-exec, which
// Go's own never lack.
func inheritedFiles() ([]*os.File, error) {
	if inherited != nil {
		return inherited, nil
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		for len(files) <= fd {
			files = append(files, nil)
		}
		files[fd] = os.NewFile(uintptr(fd), "inherited")
	}
	inherited = files
	return files, nil
}

// fail reports err as runc reports its errors: on standard error, and in
// the log file the caller named, in the format it asked for (containerd
// reads a failure's cause from there).
func (r *runtime) fail(err error) {
	msg := "syscell-runtime: " + err.Error()
	fmt.Fprintln(r.stderr, msg)
	if r.inv == nil || r.inv.global("log") == "" {
		return
	}
	f, ferr := os.OpenFile(r.inv.global("log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if ferr != nil {
		return
	}
	defer f.Close()
	if r.inv.global("log-format") == "json" {
		line, _ := json.Marshal(map[string]string{"level": "error", "msg": msg, "time": time.Now().Format(time.RFC3339Nano)})
		f.Write(append(line, '\n'))
		return
	}
	fmt.Fprintf(f, "time=%q level=error msg=%q\n", time.Now().Format(time.RFC3339Nano), msg)
}
