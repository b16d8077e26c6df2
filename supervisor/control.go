package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// The control protocol: one JSON request per line from the runtime, one
// JSON reply per line from the supervisor, on the control socket, which
// only root (or the supervisor's own user) may use.

// Operations of the control protocol.
const (
	// opPrepare registers a container about to be created: its policy or
	// recording, and the environment of its process, which the reply
	// returns with what the audit library needs.
	opPrepare = "prepare"
	// opAttach gives a prepared container's init process, once created.
	opAttach = "attach"
	// opStart says that a registered container's program starts: it
	// must connect within the start timeout, or be killed.
	opStart = "start"
	// opEnv returns the environment of a process run in a registered
	// container (runc exec) with what the audit library needs.
	opEnv = "env"
	// opForget unregisters a container that is deleted.
	opForget = "forget"
	// opStatus lists the registered containers.
	opStatus = "status"
)

// request is one request of the control protocol.
type request struct {
	Op  string   `json:"op"`
	ID  string   `json:"id,omitempty"`
	Use Use      `json:"use,omitzero"`
	Env []string `json:"env,omitempty"`
	Pid int      `json:"pid,omitempty"`
}

// reply is the answer to one request.
type reply struct {
	Error      string      `json:"error,omitempty"`
	Env        []string    `json:"env,omitempty"`
	Containers []Container `json:"containers,omitempty"`
}

// Use is what a container asks of the supervisor.
type Use struct {
	// Policy names a policy of the policy directory to enforce per
	// library; Mode is enforce (the default), audit or complain.
	Policy string `json:"policy,omitempty"`
	Mode   string `json:"mode,omitempty"`
	// Record names the recording to write the container's calls to.
	Record string `json:"record,omitempty"`
}

// Client speaks the control protocol.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
}

// controlTimeout bounds one exchange: a supervisor that does not answer
// makes the runtime fail rather than hang.
const controlTimeout = 30 * time.Second

// Dial connects to the control socket of the supervisor whose state
// directory is dir.
func Dial(dir string) (*Client, error) {
	conn, err := net.Dial("unix", Dirs{State: dir}.ControlSocket())
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	return &Client{conn: conn, r: bufio.NewReader(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) call(req request) (*reply, error) {
	c.conn.SetDeadline(time.Now().Add(controlTimeout))
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(append(data, '\n')); err != nil {
		return nil, fmt.Errorf("supervisor: %s: %w", req.Op, err)
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("supervisor: %s: no reply: %w", req.Op, err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return nil, fmt.Errorf("supervisor: %s: bad reply: %w", req.Op, err)
	}
	if rep.Error != "" {
		return nil, errors.New(rep.Error)
	}
	return &rep, nil
}

// Prepare registers container id, about to be created, with what it
// asks of the supervisor, and returns the environment env of its
// process with what the audit library needs (env itself for a
// recording).
func (c *Client) Prepare(id string, use Use, env []string) ([]string, error) {
	rep, err := c.call(request{Op: opPrepare, ID: id, Use: use, Env: env})
	if err != nil {
		return nil, err
	}
	return rep.Env, nil
}

// Attach tells the supervisor the init process of container id, once
// created and before it starts.
func (c *Client) Attach(id string, pid int) error {
	_, err := c.call(request{Op: opAttach, ID: id, Pid: pid})
	return err
}

// Start tells the supervisor that container id starts its program,
// which must connect within the supervisor's start timeout: a program
// whose loader did not load the audit library is killed.
func (c *Client) Start(id string) error {
	_, err := c.call(request{Op: opStart, ID: id})
	return err
}

// Env returns the environment env of a process to run in container id
// with what the audit library needs.
func (c *Client) Env(id string, env []string) ([]string, error) {
	rep, err := c.call(request{Op: opEnv, ID: id, Env: env})
	if err != nil {
		return nil, err
	}
	return rep.Env, nil
}

// Forget unregisters container id.
func (c *Client) Forget(id string) error {
	_, err := c.call(request{Op: opForget, ID: id})
	return err
}

// Status lists the registered containers, sorted by id.
func (c *Client) Status() ([]Container, error) {
	rep, err := c.call(request{Op: opStatus})
	if err != nil {
		return nil, err
	}
	return rep.Containers, nil
}
