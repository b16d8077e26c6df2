//go:build linux

package record

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
)

// Tasks lists running tasks to record: every thread of each process, by
// process id.
type Tasks func() (map[int][]int, error)

// AttachOptions configure Attach.
type AttachOptions struct {
	Options
	// FromExec counts the calls of the processes listed at the start
	// only from their next exec: a container's first process runs the
	// runtime's code (runc's or crun's) until it executes the
	// container's program. Their calls before it are not attributed.
	FromExec bool
	// Root is the directory the paths of the tasks' files are found
	// from, when their root is not syscell's (a container's), as a path
	// that stays valid after they exit: with a container's mount
	// namespace held open, /proc/self/fd/N of its root directory. The
	// recording names files by the tasks' own paths.
	Root string
}

// Attached is a recording of tasks that were already running.
type Attached struct {
	tracer *trace.Tracer
	objs   *attribute.Objects
	r      *recorder
	opts   AttachOptions
}

// Attach starts recording tasks that already run: those tasks lists, and
// every task they create from then on. Calls the listed tasks were making
// when the recording began are not seen; their next ones are. Tasks that
// start between two listings are caught by listing again until a listing
// finds nothing new. When Attach returns, the tasks are traced.
func Attach(tasks Tasks, opts AttachOptions) (*Attached, error) {
	tracer, err := opts.open()
	if err != nil {
		return nil, err
	}
	rt := opts.Runtime
	if rt == nil {
		rt = attribute.DefaultRuntime()
	}
	a := &Attached{tracer: tracer, objs: attribute.NewObjects(rt), opts: opts}
	a.r = newRecorder(tracer, a.objs)
	a.r.untilExec, a.r.root, a.r.servingFrom = map[int]bool{}, opts.Root, opts.ServingFrom
	if err := traceTasks(tracer, tasks, a.r, opts.FromExec); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// Wait records until every traced task has exited, or until ctx is done
// (the recording is then marked interrupted), and returns the recording.
func (a *Attached) Wait(ctx context.Context) (*Recording, error) {
	defer a.close()
	exited := make(chan struct{})
	close(exited)
	loop := consumeLoop{r: a.r, progress: newProgress(a.opts.Options, a.tracer)}
	interrupted, err := loop.run(ctx, exited)
	if err != nil {
		return nil, err
	}
	rec, err := loop.finish()
	if err != nil {
		return nil, err
	}
	rec.Stats.Interrupted = interrupted
	rec.Stats.StackCopy = stackCopy(a.opts.Trace)
	return rec, nil
}

func (a *Attached) close() {
	a.tracer.Close()
	a.objs.Close()
}

// traceTasks traces what tasks lists until a listing finds no task it
// did not trace already. A task that exits meanwhile is no error.
func traceTasks(t *trace.Tracer, tasks Tasks, r *recorder, fromExec bool) error {
	traced, seen := map[int]bool{}, map[int]bool{}
	for {
		procs, err := tasks()
		if err != nil {
			return err
		}
		added := 0
		for pid, tids := range procs {
			for _, tid := range tids {
				if traced[tid] {
					continue
				}
				if err := t.Trace(tid); err != nil {
					return err
				}
				traced[tid], added = true, added+1
			}
			if !seen[pid] {
				seen[pid] = true
				r.stats.Processes++
				r.untilExec[pid] = fromExec
			}
		}
		if added == 0 {
			return nil
		}
	}
}

// ProcessTasks lists the threads of the process pid.
func ProcessTasks(pid int) Tasks {
	return func() (map[int][]int, error) {
		tids, err := threads(pid)
		if err != nil {
			return nil, fmt.Errorf("record: process %d: %w", pid, err)
		}
		return map[int][]int{pid: tids}, nil
	}
}

// CgroupTasks lists the processes of the cgroup at dir (a directory of
// a mounted cgroup hierarchy, version 1 or 2) and of the cgroups below
// it, with their threads.
func CgroupTasks(dir string) Tasks {
	return func() (map[int][]int, error) {
		procs := map[int][]int{}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return err
			}
			pids, err := readPids(path)
			if err != nil {
				return err
			}
			for _, pid := range pids {
				tids, err := threads(pid)
				if errors.Is(err, fs.ErrNotExist) {
					continue // it exited meanwhile
				}
				if err != nil {
					return err
				}
				procs[pid] = tids
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("record: cgroup %s: %w", dir, err)
		}
		if len(procs) == 0 {
			return nil, fmt.Errorf("record: cgroup %s holds no process", dir)
		}
		return procs, nil
	}
}

// threads lists the threads of process pid.
func threads(pid int) ([]int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

// readPids reads a cgroup.procs file.
func readPids(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is no process id", path, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
