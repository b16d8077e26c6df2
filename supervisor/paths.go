package supervisor

import (
	"path/filepath"

	"github.com/syscell/syscell/run/cell"
)

// Default directories.
const (
	// DefaultDir is the supervisor's state directory.
	DefaultDir = "/run/syscell"
	// DefaultPolicyDir is where policies are read from, by name.
	DefaultPolicyDir = "/etc/syscell/policies"
	// DefaultRecordDir is where recordings are written, by name.
	DefaultRecordDir = "/var/lib/syscell/recordings"
)

// Where a supervised container finds the supervisor's shared directory.
const (
	ContainerDir     = "/run/syscell"
	ContainerLibrary = ContainerDir + "/" + cell.LibraryName
	ContainerSocket  = ContainerDir + "/" + socketName
)

const socketName = "supervisor.sock"

// Dirs are the directories a supervisor uses.
type Dirs struct {
	// State holds the control socket, the containers' registrations and
	// the shared directory; PolicyDir the policies, RecordDir the
	// recordings.
	State, PolicyDir, RecordDir string
}

// DefaultDirs are the directories a supervisor uses unless told others.
func DefaultDirs() Dirs {
	return Dirs{State: DefaultDir, PolicyDir: DefaultPolicyDir, RecordDir: DefaultRecordDir}
}

// ControlSocket is the socket through which the runtime registers
// containers.
func (d Dirs) ControlSocket() string { return filepath.Join(d.State, "control.sock") }

// Shared is the directory mounted into every supervised container.
func (d Dirs) Shared() string { return filepath.Join(d.State, "shared") }

// ProgramSocket is the socket programs connect to, on the host.
func (d Dirs) ProgramSocket() string { return filepath.Join(d.Shared(), socketName) }

// Library is the audit library the containers load, on the host.
func (d Dirs) Library() string { return filepath.Join(d.Shared(), cell.LibraryName) }

// Managed is the file that says which service runs the supervisor (a
// systemd unit, a Kubernetes DaemonSet): the runtime then waits for it
// rather than start one of its own.
func (d Dirs) Managed() string { return filepath.Join(d.State, "managed") }

// Lock is the file a running supervisor locks, which holds its pid.
func (d Dirs) Lock() string { return filepath.Join(d.State, "supervise.lock") }

func (d Dirs) registrations() string { return filepath.Join(d.State, "containers") }
