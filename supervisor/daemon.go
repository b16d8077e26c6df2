package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/run/cell"
)

// Config configures a supervisor.
type Config struct {
	Dirs Dirs
	// Library is the audit library to publish in the shared directory.
	Library string
	// Log gets a line for each container registered, each program
	// served or refused, and each recording written.
	Log io.Writer
	// StartTimeout is how long a container's program may take, from the
	// runtime's start, to connect; zero means DefaultStartTimeout.
	StartTimeout time.Duration
}

// daemon is a running supervisor.
type daemon struct {
	cfg Config
	log *log.Logger
	// ctx ends the supervisor: its programs' supervision, and its
	// recordings.
	ctx context.Context

	mu         sync.Mutex
	containers map[string]*Container
	// controls are the open control connections, closed when the
	// supervisor stops.
	controls map[*net.UnixConn]bool
	// sessions are the programs supervised and the recordings made.
	sessions sync.WaitGroup
}

// Run runs a supervisor until ctx is done. It fails at once if another
// supervisor uses the same state directory. When it returns, the
// listeners of every program it supervised are closed (their supervised
// calls fail with ENOSYS) and the recordings in progress are written,
// marked interrupted.
func Run(ctx context.Context, cfg Config) error {
	d := &daemon{cfg: cfg, log: log.New(cfg.Log, "syscell supervise: ", log.LstdFlags), ctx: ctx, controls: map[*net.UnixConn]bool{}}
	unlock, err := d.setUp()
	if err != nil {
		return err
	}
	defer unlock()
	containers, errs := restore(cfg.Dirs.registrations())
	for _, err := range errs {
		d.log.Printf("dropped a registration: %v", err)
	}
	d.containers = containers
	control, err := listen(cfg.Dirs.ControlSocket(), 0o600)
	if err != nil {
		return err
	}
	programs, err := listen(cfg.Dirs.ProgramSocket(), 0o666)
	if err != nil {
		control.Close()
		return err
	}
	d.log.Printf("serving %d registered containers; programs connect to %s", len(containers), cfg.Dirs.ProgramSocket())
	go d.accept(control, d.serveControl)
	go d.accept(programs, d.serveProgram)
	<-ctx.Done()
	control.Close()
	programs.Close()
	d.mu.Lock()
	for conn := range d.controls {
		conn.Close()
	}
	d.mu.Unlock()
	d.sessions.Wait()
	return nil
}

// setUp makes the directories, takes the state directory's lock and
// publishes the audit library. It returns what releases the lock.
func (d *daemon) setUp() (func(), error) {
	dirs := d.cfg.Dirs
	for _, dir := range []struct {
		path string
		mode os.FileMode
	}{{dirs.State, 0o700}, {dirs.Shared(), 0o755}, {dirs.registrations(), 0o700}} {
		if err := os.MkdirAll(dir.path, dir.mode); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
		if err := os.Chmod(dir.path, dir.mode); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
	}
	lock, err := os.OpenFile(dirs.Lock(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("supervisor: another supervisor uses %s: %w", dirs.State, err)
	}
	// The lock holds the supervisor's pid, for whoever must stop it.
	if err := lock.Truncate(0); err == nil {
		lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err := publish(d.cfg.Library, dirs.Library()); err != nil {
		lock.Close()
		return nil, err
	}
	return func() { lock.Close() }, nil
}

// publish copies the audit library to the shared directory, unless the
// same is there: a file replaced while containers map it would be a new
// file for their next programs, never a change under their feet.
func publish(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("supervisor: the audit library: %w (make build puts it next to syscell)", err)
	}
	if old, err := os.ReadFile(to); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("supervisor: publish the audit library: %w", err)
	}
	return os.Rename(tmp, to)
}

// listen listens on a unix socket at path, made anew, with mode.
func listen(path string, mode os.FileMode) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	return l, nil
}

// accept serves each connection to l on a goroutine of its own, until l
// is closed.
func (d *daemon) accept(l *net.UnixListener, serve func(*net.UnixConn)) {
	for {
		conn, err := l.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			d.log.Printf("accept on %s: %v", l.Addr(), err)
			continue
		}
		d.sessions.Add(1)
		go func() {
			defer d.sessions.Done()
			serve(conn)
		}()
	}
}

// serveProgram supervises the program that connected, under the policy
// of the container it belongs to, or refuses it: the audit library then
// exits, before the program's first instruction.
func (d *daemon) serveProgram(conn *net.UnixConn) {
	p, err := identify(conn)
	if err != nil {
		d.log.Printf("refused a program: %v", err)
		conn.Close()
		return
	}
	defer p.close()
	c := d.owner(p)
	if c == nil || c.policy == nil {
		d.log.Printf("refused process %d: it belongs to no container registered with a policy", p.pid)
		conn.Close()
		return
	}
	d.mu.Lock()
	c.connected = true
	d.mu.Unlock()
	opt := cell.Options{Library: ContainerLibrary, Root: "/proc/self/fd/" + strconv.Itoa(p.root), Mode: c.mode}
	res, err := cell.Supervise(d.ctx, conn, c.policy, opt)
	d.mu.Lock()
	c.Programs++
	if res != nil {
		c.Supervised += total(res.Supervised, func(s cell.Supervised) int { return s.Count })
		c.Denied += total(res.Denied, func(s cell.Denied) int { return s.Count })
	}
	d.mu.Unlock()
	switch {
	case err != nil:
		d.log.Printf("container %s: process %d: %v", c.ID, p.pid, err)
	case res != nil:
		d.log.Printf("container %s: process %d and its descendants ended: %d calls supervised, %d denied; a call decided in %v (median), %v (99th percentile)",
			c.ID, p.pid, total(res.Supervised, func(s cell.Supervised) int { return s.Count }), total(res.Denied, func(s cell.Denied) int { return s.Count }),
			res.Latency.Median, res.Latency.P99)
	}
}

func total[T any](xs []T, n func(T) int) int {
	sum := 0
	for _, x := range xs {
		sum += n(x)
	}
	return sum
}

// owner is the registered container p belongs to: of those that hold
// it, the one with the deepest cgroups. A container whose init process
// is gone holds nothing, though the runtime did not unregister it: the
// kernel reuses the inode numbers of PID namespaces.
func (d *daemon) owner(p *peer) *Container {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *Container
	for _, c := range d.containers {
		if c.holds(p) && c.alive() && (best == nil || c.depth() > best.depth()) {
			best = c
		}
	}
	return best
}

// serveControl answers the runtime's requests, one per line. Only root
// and the supervisor's own user may make them.
func (d *daemon) serveControl(conn *net.UnixConn) {
	d.mu.Lock()
	if d.ctx.Err() != nil {
		d.mu.Unlock()
		conn.Close()
		return
	}
	d.controls[conn] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.controls, conn)
		d.mu.Unlock()
		conn.Close()
	}()
	if err := checkControlPeer(conn); err != nil {
		d.log.Printf("refused a control connection: %v", err)
		return
	}
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req request
		var rep reply
		if err := json.Unmarshal(line, &req); err != nil {
			rep.Error = fmt.Sprintf("supervisor: bad request: %v", err)
		} else {
			rep = d.handle(req)
		}
		data, _ := json.Marshal(rep)
		if _, err := conn.Write(append(data, '\n')); err != nil {
			return
		}
	}
}

// checkControlPeer lets root and the supervisor's own user in.
func checkControlPeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	if cred.Uid != 0 && int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("process %d of user %d", cred.Pid, cred.Uid)
	}
	return nil
}

// handle answers one request.
func (d *daemon) handle(req request) reply {
	var rep reply
	var err error
	switch req.Op {
	case opPrepare:
		rep.Env, err = d.prepare(req)
	case opAttach:
		err = d.attach(req.ID, req.Pid)
	case opStart:
		err = d.start(req.ID)
	case opEnv:
		rep.Env, err = d.env(req.ID, req.Env)
	case opForget:
		err = d.forget(req.ID)
	case opStatus:
		rep.Containers = d.status()
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		rep.Error = "supervisor: " + err.Error()
	}
	return rep
}

// prepare registers a container about to be created.
func (d *daemon) prepare(req request) ([]string, error) {
	if err := checkName("container", req.ID); err != nil {
		return nil, err
	}
	c := &Container{ID: req.ID, Use: req.Use}
	env := req.Env
	switch {
	case c.Use.Policy != "" && c.Use.Record != "":
		return nil, errors.New("a container is either recorded or run under a policy, not both")
	case c.Use.Policy != "":
		if err := c.load(d.cfg.Dirs.PolicyDir); err != nil {
			return nil, err
		}
		var err error
		if env, err = cell.Environment(c.policy, req.Env, ContainerLibrary, ContainerSocket); err != nil {
			return nil, err
		}
	case c.Use.Record != "":
		if err := checkName("recording", c.Use.Record); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("neither a policy nor a recording")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.containers[c.ID]; old != nil && old.Pid != 0 && old.alive() {
		return nil, fmt.Errorf("container %s is registered already", c.ID)
	}
	if err := c.save(d.cfg.Dirs.registrations()); err != nil {
		return nil, err
	}
	d.containers[c.ID] = c
	d.log.Printf("container %s: prepared (%s)", c.ID, c.Use)
	return env, nil
}

func (u Use) String() string {
	if u.Record != "" {
		return "recording " + u.Record
	}
	mode := u.Mode
	if mode == "" {
		mode = "enforce"
	}
	return fmt.Sprintf("policy %s, %s", u.Policy, mode)
}

// attach notes the init process of a prepared container, and starts
// recording it if that is what it asked for.
func (d *daemon) attach(id string, pid int) error {
	ns, err := pidNamespace(pid)
	if err != nil {
		return fmt.Errorf("container %s: process %d: %w", id, pid, err)
	}
	groups, err := cgroupLines(pid)
	if err != nil {
		return fmt.Errorf("container %s: process %d: %w", id, pid, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.containers[id]
	if c == nil {
		return fmt.Errorf("container %s was not prepared", id)
	}
	c.Pid, c.Namespace, c.Cgroups = pid, ns, groups
	if err := c.save(d.cfg.Dirs.registrations()); err != nil {
		return err
	}
	if c.Use.Record != "" {
		if err := d.startRecording(c); err != nil {
			return err
		}
	}
	d.log.Printf("container %s: init process %d, pid namespace %d", id, pid, ns)
	return nil
}

// DefaultStartTimeout is how long a container's program may take, from
// the runtime's start, to connect: as long as syscell run waits for its
// program's audit library to greet it.
const DefaultStartTimeout = 10 * time.Second

// start watches container id's program start: one that has not
// connected within the start timeout runs without its filter (its loader
// ignored the audit library, which it says on the program's standard
// error), and is killed.
func (d *daemon) start(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.containers[id]
	if c == nil || c.Pid == 0 {
		return fmt.Errorf("container %s is not registered", id)
	}
	if c.policy == nil || c.connected {
		return nil
	}
	timeout := d.cfg.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	time.AfterFunc(timeout, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if c.connected || d.containers[id] != c {
			return
		}
		if err := c.kill(); err != nil {
			d.log.Printf("container %s: its program did not connect within %v, and could not be killed: %v", id, timeout, err)
			return
		}
		d.log.Printf("container %s: its program did not connect within %v (its loader did not load the audit library): killed", id, timeout)
	})
	return nil
}

// env is the environment of a process run in container id.
func (d *daemon) env(id string, env []string) ([]string, error) {
	d.mu.Lock()
	c := d.containers[id]
	d.mu.Unlock()
	switch {
	case c == nil:
		return nil, fmt.Errorf("container %s is not registered", id)
	case c.policy == nil:
		return env, nil
	}
	return cell.Environment(c.policy, env, ContainerLibrary, ContainerSocket)
}

// forget unregisters container id. Its programs' supervision ends as
// their processes do.
func (d *daemon) forget(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.containers[id] == nil {
		return nil
	}
	delete(d.containers, id)
	d.log.Printf("container %s: forgotten", id)
	err := os.Remove(filepath.Join(d.cfg.Dirs.registrations(), id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (d *daemon) status() []Container {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Container
	for _, id := range slices.Sorted(maps.Keys(d.containers)) {
		out = append(out, d.containers[id].status())
	}
	return out
}
