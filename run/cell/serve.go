package cell

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
)

// A supervisor that serves many programs (package supervisor: the
// programs of containers) does not start them: each connects to its
// socket, named in its environment by Environment, and the supervisor
// hands the connection to Supervise, which speaks with the audit library
// and supervises the program exactly as Run does.

// Environment returns env with what the audit library needs to supervise
// a program under the compartments of p that connects to the supervisor
// at socket: the library (LD_AUDIT), the socket, the room for what
// executed images inherit, and the loader's static TLS, all as the
// program names them. The room is sized for any files the compartments'
// paths may lead to, which are not known before the program's root is.
func Environment(p *policy.Policy, env []string, library, socket string) ([]string, error) {
	if len(p.Compartments) == 0 {
		return nil, errors.New("cell: the policy has no compartments")
	}
	if !filepath.IsAbs(library) || !filepath.IsAbs(socket) {
		return nil, fmt.Errorf("cell: the audit library %q and the socket %q must be absolute paths", library, socket)
	}
	cfg, err := newConfig(p, widestIdentities(p))
	if err != nil {
		return nil, err
	}
	return programEnv(env, library, socketEnv+"="+socket, cfg.inheritRoom()), nil
}

// widestIdentities names p's compartments with the longest lines any
// files at their paths could give: the configuration the library gets
// is no longer than with these.
func widestIdentities(p *policy.Policy) *identities {
	ids := &identities{}
	for _, c := range p.Compartments {
		ids.names = append(ids.names, c.Name)
		ids.ids = append(ids.ids, identity{buildID: strings.ToLower(c.BuildID), file: true, dev: math.MaxUint64, ino: math.MaxUint64, name: c.Name})
	}
	return ids
}

// Supervise supervises the program at the other end of conn, which
// connected with the environment Environment gave it, under the
// compartments of p: the same conversation with its audit library as
// Run's, the same filter and the same supervisor. It returns once no
// task uses the filter any more (the program and every process it
// started have exited), or when ctx is done, which closes the listener:
// the program's supervised calls then fail with ENOSYS. Result's
// ExitCode and Signal are not the supervisor's to know, and are zero.
// On an error before the filter is installed, the program exits without
// running its own code, as the audit library does whenever the socket
// closes early.
func Supervise(ctx context.Context, conn *net.UnixConn, p *policy.Policy, opt Options) (*Result, error) {
	defer conn.Close()
	if len(p.Compartments) == 0 {
		return nil, errors.New("cell: the policy has no compartments")
	}
	if err := checkLibrary(opt.Root, opt.Library); err != nil {
		return nil, err
	}
	ids, err := rootedIdentities(p, opt.Root)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(p, ids)
	if err != nil {
		return nil, err
	}
	pid, err := peerPid(conn)
	if err != nil {
		return nil, err
	}
	sup, start, err := handshake(newChannel(conn), p, cfg, opt, opt.Library, pid)
	conn.Close()
	if err != nil {
		return nil, err
	}
	go sup.serve()
	select {
	case <-sup.done:
	case <-ctx.Done():
	}
	sup.stop()
	return sup.result(start), sup.err
}

// peerPid is the process at the other end of conn.
func peerPid(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("cell: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("cell: %w", err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("cell: the peer of the socket: %w", credErr)
	}
	return int(cred.Pid), nil
}

// checkLibrary checks that the audit library the program names is one,
// under its root.
func checkLibrary(root, path string) error {
	if root == "" {
		_, err := library(path)
		return err
	}
	fd, err := openInRoot(root, path)
	if err != nil {
		return fmt.Errorf("cell: the audit library %s under %s: %w", path, root, err)
	}
	defer unix.Close(fd)
	_, err = library(fdPath(fd))
	return err
}

// CheckProgram makes sure that the loader will load the audit library
// into the program at path, found under root as the program's own root
// directory would find it (and its #! interpreters under root): as Run
// does before it starts a program, it returns an error wrapping
// ErrNotAuditable for a statically linked program and, where privileges
// is set (no no_new_privs), for one whose execution raises privileges.
// With library (the audit library, as the supervisor publishes it), it
// also checks that root has glibc's loader and a glibc that defines
// every version of its symbols the library needs: a loader that cannot
// load it (musl's, an older glibc's) would run the program without it.
func CheckProgram(root, path, library string, privileges bool) error {
	fd, err := openInRoot(root, path)
	if err != nil {
		return fmt.Errorf("cell: %s under %s: %w", path, root, err)
	}
	defer unix.Close(fd)
	if _, err := checkChain(root, fdPath(fd), privileges); err != nil {
		return err
	}
	if library == "" {
		return nil
	}
	return checkGlibc(root, library)
}

// glibc's loader on x86_64, which every glibc program names, and where
// the C library lies on the systems syscell knows (Debian's multiarch
// directories first).
const glibcLoader = "/lib64/ld-linux-x86-64.so.2"

var libcDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// checkGlibc checks that the glibc under root can load library.
func checkGlibc(root, library string) error {
	needs, err := versionNeeds(library)
	if err != nil {
		return err
	}
	found := map[string]string{}
	for _, path := range append([]string{glibcLoader}, libcDirs...) {
		if path != glibcLoader {
			path += "/libc.so.6"
		}
		fd, err := openInRoot(root, path)
		if err != nil {
			continue
		}
		f, err := elf.Open(fdPath(fd))
		if err == nil {
			var versions []elf.DynamicVersion
			if versions, err = f.DynamicVersions(); err == nil {
				name := filepath.Base(path)
				for _, v := range versions {
					found[name+" "+v.Name] = path
				}
				found[name] = path
			}
			f.Close()
		}
		unix.Close(fd)
		if found["libc.so.6"] != "" {
			break
		}
	}
	if found[filepath.Base(glibcLoader)] == "" {
		return fmt.Errorf("cell: %s has no glibc loader (%s), which alone loads audit libraries: %w", root, glibcLoader, ErrNotAuditable)
	}
	for _, need := range needs {
		if found[need.Name] == "" {
			return fmt.Errorf("cell: %s has no %s, which the audit library needs: %w", root, need.Name, ErrNotAuditable)
		}
		for _, dep := range need.Needs {
			if found[need.Name+" "+dep.Dep] == "" {
				return fmt.Errorf("cell: %s under %s lacks %s, which the audit library needs (build it against an older glibc): %w",
					found[need.Name], root, dep.Dep, ErrNotAuditable)
			}
		}
	}
	return nil
}

// versionNeeds are the symbol versions library needs, by object: none
// where it has no table of them, as the audit library, which needs no
// library (audit/rt.h), has not.
func versionNeeds(library string) ([]elf.DynamicVersionNeed, error) {
	f, err := elf.Open(library)
	if err != nil {
		return nil, fmt.Errorf("cell: the audit library: %w", err)
	}
	defer f.Close()
	if f.SectionByType(elf.SHT_GNU_VERNEED) == nil {
		return nil, nil
	}
	needs, err := f.DynamicVersionNeeds()
	if err != nil {
		return nil, fmt.Errorf("cell: the audit library %s: %w", library, err)
	}
	return needs, nil
}

// nowhere is a path at which no file can be: /proc/self/fd holds only
// the numbers of open descriptors.
const nowhere = "/proc/self/fd/-1"

// rootedIdentities is newIdentities for a program whose root directory
// the supervisor reaches at root: each compartment's path is followed
// under root, symbolic links included, and the file found there (or
// nowhere) is what the compartment names.
func rootedIdentities(p *policy.Policy, root string) (*identities, error) {
	if root == "" {
		return newIdentities(p)
	}
	q := *p
	q.Compartments = slices.Clone(p.Compartments)
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, c := range q.Compartments {
		path := c.Path
		if path == "" && strings.ContainsRune(c.Name, '/') {
			path = c.Name
		}
		if path == "" {
			continue
		}
		fd, err := openInRoot(root, path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			q.Compartments[i].Path = nowhere
		case err != nil:
			return nil, fmt.Errorf("cell: compartment %q: %s under %s: %w", c.Name, path, root, err)
		default:
			fds = append(fds, fd)
			q.Compartments[i].Path = fdPath(fd)
		}
	}
	return newIdentities(&q)
}

// openInRoot opens path (O_PATH) with root as the root directory, as a
// process whose root it is resolves it: ".." and absolute symbolic links
// stay under root.
func openInRoot(root, path string) (int, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	for {
		fd, err := unix.Openat2(dir, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// fdPath is the path that leads to what descriptor fd of this process
// is open on.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
