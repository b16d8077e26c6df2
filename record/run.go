//go:build linux

package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
)

// Options configure a recording.
type Options struct {
	Trace trace.Options
	// Runtime tells the system runtime's libraries; nil means
	// attribute.DefaultRuntime.
	Runtime attribute.Runtime
	// Progress, if not nil, receives a line of progress every
	// ProgressEvery (default DefaultProgressEvery).
	Progress      io.Writer
	ProgressEvery time.Duration
	// Signals, if not nil, delivers signals to pass on to the command,
	// which is recorded on until it and its descendants have exited.
	Signals <-chan os.Signal
	// ServingFrom, if not empty, records by phase (phases.go): it names
	// the calls whose first one starts a process's serving phase
	// (DefaultServingFrom, for instance).
	ServingFrom []string
}

// open loads the recorder's program for opts.
func (opts *Options) open() (*trace.Tracer, error) {
	nrs, err := ServingNumbers(opts.ServingFrom)
	if err != nil {
		return nil, fmt.Errorf("record: serving from: %w", err)
	}
	topts := opts.Trace
	topts.ServingFrom = nrs
	return trace.Open(topts)
}

// DefaultProgressEvery is how often progress is reported.
const DefaultProgressEvery = 5 * time.Second

// pollEvery bounds how long the recorder waits for an event before it
// checks whether the traced tasks are gone.
const pollEvery = 50 * time.Millisecond

// Run runs cmd under the recorder, from its first instruction until it
// and every task it created have exited, or until ctx is done (the
// recording is then marked interrupted), and returns the recording and how
// cmd ended. The error is the recorder's own failure; cmd's exit status is
// in ProcessState.
func Run(ctx context.Context, cmd *exec.Cmd, opts Options) (*Recording, *os.ProcessState, error) {
	tracer, err := opts.open()
	if err != nil {
		return nil, nil, err
	}
	defer tracer.Close()
	rt := opts.Runtime
	if rt == nil {
		rt = attribute.DefaultRuntime()
	}
	objs := attribute.NewObjects(rt)
	defer objs.Close()
	if err := tracer.Start(cmd); err != nil {
		return nil, nil, fmt.Errorf("record: start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	r := newRecorder(tracer, objs)
	r.servingFrom = opts.ServingFrom
	r.stats.Processes = 1
	loop := consumeLoop{r: r, progress: newProgress(opts, tracer), signals: opts.Signals, cmd: cmd}
	interrupted, err := loop.run(ctx, exited)
	if err != nil {
		cmd.Process.Kill()
		<-exited
		return nil, nil, err
	}
	rec, err := loop.finish()
	if err != nil {
		return nil, nil, err
	}
	rec.Stats.Interrupted = interrupted
	rec.Stats.StackCopy = stackCopy(opts.Trace)
	if interrupted {
		return rec, nil, nil
	}
	return rec, cmd.ProcessState, nil
}

func stackCopy(opts trace.Options) int {
	if opts.StackBytes == 0 {
		return trace.DefaultStackBytes
	}
	return opts.StackBytes
}

// consumeLoop reads and applies events until the traced tasks are gone.
type consumeLoop struct {
	r        *recorder
	progress *progress
	signals  <-chan os.Signal
	cmd      *exec.Cmd
}

// run consumes events until cmd has exited and no task is traced any
// more, or until ctx is done (interrupted).
func (l *consumeLoop) run(ctx context.Context, exited <-chan struct{}) (interrupted bool, err error) {
	lastCheck := time.Now()
	for {
		if err := l.next(pollEvery); err != nil {
			return false, err
		}
		l.progress.tick(l.r)
		if time.Since(lastCheck) < pollEvery {
			continue
		}
		lastCheck = time.Now()
		select {
		case <-ctx.Done():
			return true, nil
		case sig := <-l.signals:
			l.cmd.Process.Signal(sig)
		case <-exited:
			tracing, err := l.r.tracer.Tracing()
			if err != nil || !tracing {
				return false, err
			}
		default:
		}
	}
}

// next applies the next event, if one comes within timeout.
func (l *consumeLoop) next(timeout time.Duration) error {
	ev, err := l.r.tracer.Read(timeout)
	if errors.Is(err, trace.ErrTimeout) {
		return nil
	}
	if err != nil {
		return err
	}
	return l.r.handle(ev)
}

// finish stops the program, applies the events still queued, and collects
// the kernel's counts.
func (l *consumeLoop) finish() (*Recording, error) {
	t := l.r.tracer
	if err := t.Detach(); err != nil {
		return nil, err
	}
	for t.Pending() > 0 {
		if err := l.next(pollEvery); err != nil {
			return nil, err
		}
	}
	counts, err := t.Counts()
	if err != nil {
		return nil, err
	}
	lost, err := t.Lost()
	if err != nil {
		return nil, err
	}
	return l.r.finish(counts, lost)
}
