package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/supervisor"
)

// create creates a container, registered with the supervisor where its
// annotations ask for syscell.
func (r *runtime) create(args []string) error {
	b, err := r.readBundle("create", args, createFlags)
	if err != nil {
		return err
	}
	_, err = r.createWith(b.id, b.cl, args, b.dir, b.spec, b.use)
	return err
}

// bundle is a command line that names a bundle whose container asks for
// syscell.
type bundle struct {
	cl   *commandLine
	id   string
	dir  string
	spec *specs.Spec
	use  supervisor.Use
}

// readBundle reads the bundle command names in args. A container that
// asks nothing of syscell is the delegate's: the delegate then runs the
// command in the shim's place, and readBundle does not return.
func (r *runtime) readBundle(command string, args []string, flags commandFlags) (*bundle, error) {
	cl, err := parseCommand(args, flags)
	if err != nil {
		return nil, err
	}
	b := &bundle{cl: cl, dir: cl.value("bundle", "b")}
	if b.spec, err = readSpec(b.dir); err != nil {
		return nil, err
	}
	use, err := useOf(b.spec)
	if err != nil {
		return nil, err
	}
	if use == nil {
		return nil, r.become(command, args...)
	}
	b.use = *use
	b.id, err = cl.id()
	return b, err
}

// createWith registers container id with the supervisor, adds what the
// container needs to its bundle, has the delegate create it, and tells
// the supervisor its init process, which it returns. What fails on the
// way leaves no container behind.
func (r *runtime) createWith(id string, cl *commandLine, args []string, bundle string, spec *specs.Spec, use supervisor.Use) (int, error) {
	if spec.Process == nil || len(spec.Process.Args) == 0 {
		return 0, errors.New("config.json: the container has no process")
	}
	client, err := r.supervisor()
	if err != nil {
		return 0, err
	}
	defer client.Close()
	env, err := client.Prepare(id, use, spec.Process.Env)
	if err != nil {
		return 0, err
	}
	if use.Policy != "" {
		if err := r.addEnforcement(spec, env); err != nil {
			client.Forget(id)
			return 0, err
		}
		if err := writeSpec(bundle, spec); err != nil {
			client.Forget(id)
			return 0, err
		}
	}
	pidFile := cl.value("pid-file")
	if pidFile == "" {
		pidFile = r.recordPath(id) + ".pid"
		if err := os.MkdirAll(filepath.Dir(pidFile), 0o700); err != nil {
			return 0, err
		}
		defer os.Remove(pidFile)
		args = append([]string{"--pid-file", pidFile}, args...)
	}
	status, err := r.delegateRun("create", args...)
	if err != nil || status != 0 {
		client.Forget(id)
		if err == nil {
			err = exitStatus(status)
		}
		return 0, err
	}
	pid, err := readPid(pidFile)
	if err == nil && use.Policy != "" {
		err = checkProgram(procRoot(pid), r.dirs.Library(), spec.Process)
	}
	if err == nil {
		err = client.Attach(id, pid)
	}
	if err == nil {
		err = r.saveRecord(id, record{Use: use, Pid: pid, Process: &specs.Process{
			Env: pathOf(spec.Process.Env), Cwd: spec.Process.Cwd, NoNewPrivileges: spec.Process.NoNewPrivileges}})
	}
	if err != nil {
		r.delegateRun("delete", "--force", id)
		client.Forget(id)
		return 0, err
	}
	return pid, nil
}

// addEnforcement gives the container's process the environment env and
// mounts the supervisor's shared directory where env says it is. The
// container's own seccomp profile is left as it is. A bundle that has
// them already (a create made again after one that failed) is left with
// them once.
func (r *runtime) addEnforcement(spec *specs.Spec, env []string) error {
	spec.Process.Env = env
	for _, m := range spec.Mounts {
		switch {
		case path.Clean(m.Destination) != supervisor.ContainerDir:
		case m.Source == r.dirs.Shared():
			return nil
		default:
			return fmt.Errorf("config.json: the container mounts %s already, where syscell's audit library and socket go", m.Destination)
		}
	}
	spec.Mounts = append(spec.Mounts, specs.Mount{
		Destination: supervisor.ContainerDir,
		Type:        "bind",
		Source:      r.dirs.Shared(),
		Options:     []string{"rbind", "ro", "nosuid", "nodev"},
	})
	return nil
}

// readSpec reads a bundle's config.json.
func readSpec(bundle string) (*specs.Spec, error) {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(bundle, "config.json"), err)
	}
	return &spec, nil
}

// writeSpec replaces a bundle's config.json with spec, at once.
func writeSpec(bundle string, spec *specs.Spec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	file := filepath.Join(bundle, "config.json")
	mode := os.FileMode(0o644)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := filepath.Join(bundle, ".config.json.syscell")
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func readPid(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("the container's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("the container's pid in %s: %w", file, err)
	}
	return pid, nil
}

// procRoot is the root directory of process pid, with its mounts.
func procRoot(pid int) string { return fmt.Sprintf("/proc/%d/root", pid) }

// checkProgram checks, under root (a created container's, its mounts in
// place), that the loader will load the audit library into the program
// process runs: found as the delegate finds it, by its path or on the
// PATH of its environment.
func checkProgram(root, library string, process *specs.Process) error {
	privileges := !process.NoNewPrivileges
	name := process.Args[0]
	if strings.Contains(name, "/") {
		if !path.IsAbs(name) {
			name = path.Join("/", process.Cwd, name)
		}
		return programError(name, cell.CheckProgram(root, name, library, privileges))
	}
	for _, dir := range searchPath(process.Env) {
		err := cell.CheckProgram(root, path.Join(dir, name), library, privileges)
		if !errors.Is(err, fs.ErrNotExist) {
			return programError(path.Join(dir, name), err)
		}
	}
	return fmt.Errorf("the container's program %s is on none of its PATH's directories", name)
}

func programError(name string, err error) error {
	if err != nil {
		return fmt.Errorf("the container's program %s cannot run under its policy: %w", name, err)
	}
	return nil
}

// searchPath is the PATH of env, split.
func searchPath(env []string) []string {
	kv := pathOf(env)
	if len(kv) == 0 {
		return nil
	}
	return filepath.SplitList(strings.TrimPrefix(kv[0], "PATH="))
}

// pathOf is the PATH variable of env, if it has one.
func pathOf(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return []string{kv}
		}
	}
	return nil
}
