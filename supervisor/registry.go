package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
)

// Container is a container the runtime registered.
type Container struct {
	ID  string `json:"id"`
	Use Use    `json:"use"`
	// Pid is its init process, as the supervisor sees it; Namespace and
	// Cgroups identify the processes that belong to it (peer.go). Zero
	// until the runtime attached it.
	Pid       int      `json:"pid,omitempty"`
	Namespace uint64   `json:"pid_namespace,omitempty"`
	Cgroups   []string `json:"cgroups,omitempty"`
	// Programs counts the programs supervised in it, Supervised and
	// Denied their calls the supervisor decided and denied.
	Programs   int `json:"programs"`
	Supervised int `json:"supervised"`
	Denied     int `json:"denied"`
	// PolicyText is the policy as read at prepare, which the container
	// keeps for its lifetime.
	PolicyText []byte `json:"policy_text,omitempty"`

	policy *policy.Policy
	mode   enforce.Mode
	// connected says that a program of the container connected.
	connected bool
}

// names are what the runtime may pass for a container id, a policy or a
// recording: one path component, nothing a path could escape with, of at
// most maxName bytes. (A bounded repetition in the expression would
// compile to hundreds of states.) It is compiled when first used, not at
// every start of syscell.
var names = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })

const maxName = 251

func checkName(what, name string) error {
	if len(name) > maxName || !names().MatchString(name) {
		return fmt.Errorf("%s %q: a name of letters, digits, '.', '_' and '-' (not a path)", what, name)
	}
	return nil
}

// load reads the policy use names from dir and checks it: it must have
// compartments.
func (c *Container) load(dir string) error {
	if err := checkName("policy", c.Use.Policy); err != nil {
		return err
	}
	path, err := policyFile(dir, c.Use.Policy)
	if err != nil {
		return err
	}
	if c.PolicyText, err = os.ReadFile(path); err != nil {
		return err
	}
	return c.parse(path)
}

// parse makes the policy and the mode of what was read or restored.
func (c *Container) parse(name string) error {
	p, _, err := policy.ParseAny(name, c.PolicyText, policy.OCIOptions{})
	if err != nil {
		return err
	}
	if len(p.Compartments) == 0 {
		return fmt.Errorf("%s has no compartments: a whole-process policy is the container's own seccomp profile (syscell export --to oci)", name)
	}
	c.policy = p
	if c.Use.Mode == "" {
		return nil
	}
	c.mode, err = enforce.ParseMode(c.Use.Mode)
	return err
}

// policyFile finds policy name in dir: the file of that name, or with
// .toml or .json added.
func policyFile(dir, name string) (string, error) {
	for _, ext := range []string{"", ".toml", ".json"} {
		path := filepath.Join(dir, name+ext)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path, nil
		}
	}
	return "", fmt.Errorf("no policy %q in %s (nor %s.toml, %s.json)", name, dir, name, name)
}

// save writes the registration to dir.
func (c *Container) save(dir string) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+c.ID+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, c.ID+".json"))
}

// restore reads the registrations saved in dir, and drops those whose
// init process is gone (a container whose first process has exited is
// over, its PID namespace with it, though the runtime did not say so)
// and those never attached (a create the supervisor's restart failed).
func restore(dir string) (map[string]*Container, []error) {
	out := map[string]*Container{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, []error{err}
	}
	var errs []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(id, ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		c, err := restoreOne(path)
		switch {
		case err != nil:
		case c.Pid == 0:
			err = fmt.Errorf("container %s: never attached", id)
		case !c.alive():
			err = fmt.Errorf("container %s: its init process %d is gone", id, c.Pid)
		}
		if err != nil {
			errs = append(errs, err)
			os.Remove(path)
			continue
		}
		out[c.ID] = c
	}
	return out, errs
}

func restoreOne(path string) (*Container, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Container
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Use.Policy != "" {
		if err := c.parse(c.Use.Policy); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &c, nil
}

// alive says whether the container's init process is still the one
// registered: alive, in the registered PID namespace.
func (c *Container) alive() bool {
	ns, err := pidNamespace(c.Pid)
	return err == nil && ns == c.Namespace
}

// kill kills the container's init process, which ends the container
// (its PID namespace with it), if it is still the one registered.
func (c *Container) kill() error {
	pidfd, err := unix.PidfdOpen(c.Pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	if !c.alive() {
		return fmt.Errorf("init process %d is gone", c.Pid)
	}
	return unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
}

// status is what the control protocol tells of c.
func (c *Container) status() Container {
	s := *c
	s.PolicyText, s.policy = nil, nil
	s.Cgroups = append([]string(nil), c.Cgroups...)
	return s
}
