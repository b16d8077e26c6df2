package cell

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/syscell/syscell/compartment"
)

// Object is an object of the program as the audit library saw it at
// start.
type Object struct {
	// Path is where the loader found it (the executable's resolved).
	Path string
	// Compartment is the compartment it belongs to, "" for none.
	Compartment string
	// Runtime says it is part of the system runtime.
	Runtime bool
	// Dev and Ino identify its file, 0 for the vDSO.
	Dev, Ino uint64
	// BuildID is its GNU build-id in hex, if it has one.
	BuildID string
}

// Start is what the audit library reported when the program started.
type Start struct {
	Objects []Object
	// Layout is what the filter was compiled for.
	Layout compartment.Layout
	// Epoch is the address of the epoch page (audit/window.c).
	Epoch uint64
	// Inherit is what executed images inherit (audit/inherit.c): the
	// value of the program's SYSCELL_CELL.
	Inherit string `json:"-"`
	// Unsealed is why the stub window could not be sealed (mseal's errno),
	// 0 when it was.
	Unsealed syscall.Errno
	// Instructions is the size of the filter compiled for Layout, and
	// CompileTime what compiling it took, while the program waited.
	Instructions int
	CompileTime  time.Duration
}

// start reads the layout the library reports, for the window w and the
// compartments of ids.
func (c *channel) start(w window, ids *identities) (*Start, error) {
	s := &Start{Layout: compartment.Layout{Window: w.base, SlotShift: w.shift, Slots: ids.names, Text: map[string][]compartment.Range{}}}
	for {
		verb, f, err := c.line()
		if err != nil {
			return nil, err
		}
		if verb == "end" {
			return s, nil
		}
		if err := s.add(verb, f, ids); err != nil {
			return nil, fmt.Errorf("cell: %s line from the audit library: %w", verb, err)
		}
	}
}

// add reads one line of the layout.
func (s *Start) add(verb string, f []string, ids *identities) error {
	n := map[string]int{"object": 6, "text": 3, "runtime": 2, "sites": 1, "epoch": 1, "sealed": 1, "inherit": 1}[verb]
	if n == 0 || len(f) < n {
		return errors.New("malformed")
	}
	switch verb {
	case "object":
		o, err := parseObject(f, ids)
		s.Objects = append(s.Objects, o)
		return err
	case "text":
		slot, err := slotOf(f[0], ids)
		if err != nil {
			return err
		}
		r, err := parseRange(f[1], f[2])
		s.Layout.Text[ids.names[slot]] = append(s.Layout.Text[ids.names[slot]], r)
		return err
	case "runtime":
		r, err := parseRange(f[0], f[1])
		s.Layout.Runtime = append(s.Layout.Runtime, r)
		return err
	case "sites":
		var err error
		s.Layout.Sites, err = strconv.ParseUint(f[0], 16, 64)
		return err
	case "epoch":
		var err error
		s.Epoch, err = strconv.ParseUint(f[0], 16, 64)
		return err
	case "inherit":
		s.Inherit = strings.Join(f, " ")
		return nil
	}
	errno, err := strconv.Atoi(f[0])
	s.Unsealed = syscall.Errno(errno)
	return err
}

// parseObject reads "SLOT RUNTIME DEV INO BUILD-ID PATH"; the path is the
// rest of the line.
func parseObject(f []string, ids *identities) (Object, error) {
	o := Object{Runtime: f[1] == "1", Path: strings.Join(f[5:], " ")}
	if f[4] != "-" {
		o.BuildID = f[4]
	}
	var err1, err2 error
	o.Dev, err1 = strconv.ParseUint(f[2], 10, 64)
	o.Ino, err2 = strconv.ParseUint(f[3], 10, 64)
	if f[0] != "-1" {
		slot, err := slotOf(f[0], ids)
		if err != nil {
			return o, err
		}
		o.Compartment = ids.names[slot]
	}
	return o, errors.Join(err1, err2)
}

func slotOf(s string, ids *identities) (int, error) {
	slot, err := strconv.Atoi(s)
	if err == nil && (slot < 0 || slot >= len(ids.names)) {
		err = fmt.Errorf("slot %d of %d", slot, len(ids.names))
	}
	return slot, err
}

func parseRange(start, end string) (compartment.Range, error) {
	s, err1 := strconv.ParseUint(start, 16, 64)
	e, err2 := strconv.ParseUint(end, 16, 64)
	if err := errors.Join(err1, err2); err != nil {
		return compartment.Range{}, err
	}
	if e <= s {
		return compartment.Range{}, fmt.Errorf("empty range [%#x, %#x)", s, e)
	}
	return compartment.Range{Start: s, End: e}, nil
}
