package ociruntime

import (
	"encoding/json"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// exec runs a process in a running container. In a container under a
// policy, the process must connect to the supervisor as the container's
// first did: a process described by --process (as podman, containerd and
// CRI-O pass it) gets the environment the supervisor gives, and its
// program is checked as create checks the container's; one described by
// arguments takes the container's environment from config.json, which
// create gave it.
func (r *runtime) exec(args []string) error {
	cl, err := parseCommand(args, execFlags)
	if err != nil {
		return err
	}
	id, err := cl.id()
	if err != nil {
		return err
	}
	rec, err := r.loadRecord(id)
	if err != nil || rec == nil || rec.Use.Policy == "" {
		if err != nil {
			return err
		}
		return r.become("exec", args...)
	}
	if cl.has("process", "p") {
		err = r.prepareProcess(id, rec, cl.value("process", "p"))
	} else if len(cl.positional) > 1 {
		p := *rec.Process
		p.Args = cl.positional[1:]
		err = checkProgram(procRoot(rec.Pid), r.dirs.Library(), &p)
	}
	if err != nil {
		return err
	}
	return r.become("exec", args...)
}

// prepareProcess rewrites the process file of an exec in container id.
func (r *runtime) prepareProcess(id string, rec *record, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var p specs.Process
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(p.Args) == 0 {
		return fmt.Errorf("%s: no process arguments", file)
	}
	if err := checkProgram(procRoot(rec.Pid), r.dirs.Library(), &p); err != nil {
		return err
	}
	client, err := r.supervisor()
	if err != nil {
		return err
	}
	defer client.Close()
	if p.Env, err = client.Env(id, p.Env); err != nil {
		return err
	}
	if data, err = json.Marshal(&p); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o600)
}

// start starts a created container. The supervisor of one under a policy
// watches for its program to connect, and kills it if it does not.
func (r *runtime) start(args []string) error {
	cl, err := parseCommand(args, plainFlags)
	if err != nil {
		return err
	}
	id, err := cl.id()
	if err != nil {
		return err
	}
	if err := r.watchStart(id); err != nil {
		return err
	}
	return r.become("start", args...)
}

// watchStart tells the supervisor that container id starts, if it runs
// under a policy. Without a supervisor, the program cannot connect, and
// does not run.
func (r *runtime) watchStart(id string) error {
	rec, err := r.loadRecord(id)
	if err != nil || rec == nil || rec.Use.Policy == "" {
		return err
	}
	client, err := r.dial()
	if err != nil {
		return nil
	}
	defer client.Close()
	return client.Start(id)
}

// delete deletes a container, and unregisters it from the supervisor.
func (r *runtime) delete(args []string) error {
	cl, err := parseCommand(args, plainFlags)
	if err != nil {
		return err
	}
	if id, err := cl.id(); err == nil {
		r.forget(id)
	}
	return r.become("delete", args...)
}

// forget unregisters a container the shim registered, if it did; a
// supervisor that is not running has nothing to forget.
func (r *runtime) forget(id string) {
	rec, err := r.loadRecord(id)
	if err != nil || rec == nil {
		return
	}
	if client, err := r.dial(); err == nil {
		client.Forget(id)
		client.Close()
	}
	r.removeRecord(id)
}
