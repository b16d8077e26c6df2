package ociruntime

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/supervisor"
)

// record is what the shim remembers of a container it registered with
// the supervisor, so that exec and delete, which name only its id, know.
type record struct {
	Use supervisor.Use `json:"use"`
	// Pid is the container's init process, and Process what finds the
	// program of an exec in it: its PATH, working directory and
	// no_new_privs.
	Pid     int            `json:"pid"`
	Process *specs.Process `json:"process"`
}

func (r *runtime) recordPath(id string) string {
	return filepath.Join(r.dirs.State, "runtime", id+".json")
}

func (r *runtime) saveRecord(id string, rec record) error {
	path := r.recordPath(id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// loadRecord returns what was remembered of container id, nil for a
// container that is the delegate's alone.
func (r *runtime) loadRecord(id string) (*record, error) {
	data, err := os.ReadFile(r.recordPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec record
	return &rec, json.Unmarshal(data, &rec)
}

func (r *runtime) removeRecord(id string) {
	os.Remove(r.recordPath(id))
}
