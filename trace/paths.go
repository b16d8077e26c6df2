//go:build linux

package trace

import (
	"errors"
	"fmt"
)

// StepKind says what a step of a path reads.
type StepKind uint32

// What steps read.
const (
	// StepStack reads the word at Arg bytes from the entry stack pointer.
	StepStack = StepKind(recorderNodeKindNODE_STACK)
	// StepMemory reads the word at address Arg.
	StepMemory = StepKind(recorderNodeKindNODE_MEMORY)
	// StepRegister reads the entry register with DWARF number Arg
	// (0 rax to 15 r15).
	StepRegister = StepKind(recorderNodeKindNODE_REGISTER)
)

// Step is one read of a path and the value it found.
type Step struct {
	Kind  StepKind
	Arg   int64
	Value uint64
}

// MaxSteps is the longest path the program walks.
const MaxSteps = 31

// ErrPathTooLong reports a path with more than MaxSteps steps: its calls
// keep coming as snapshots.
var ErrPathTooLong = errors.New("trace: path longer than the program walks")

// root marks a root key (ROOT in recorder.c).
const root = 1 << 63

// Learn teaches the program that a call at instruction pointer ip, in an
// address space at epoch, whose reads give steps, belongs to compartment.
// The program then counts such calls itself. It says whether the path was
// new.
func (t *Tracer) Learn(epoch, ip uint64, steps []Step, compartment uint32) (bool, error) {
	if epoch == 0 {
		return false, fmt.Errorf("trace: learn a path in an unknown address space")
	}
	if len(steps) > MaxSteps {
		return false, ErrPathTooLong
	}
	for _, s := range steps {
		if s.Kind == StepRegister && (s.Arg < 0 || s.Arg > 15) {
			return false, fmt.Errorf("trace: a path reads register %d, which the program cannot", s.Arg)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := recorderNodeKey{Parent: root | epoch, Value: ip}
	for _, s := range steps {
		n, _, err := t.node(key, recorderNode{Kind: uint32(s.Kind), Arg: s.Arg})
		if err != nil {
			return false, err
		}
		key = recorderNodeKey{Parent: n.Id, Value: s.Value}
	}
	_, known, err := t.node(key, recorderNode{Kind: uint32(recorderNodeKindNODE_LEAF), Id: uint64(compartment)})
	return !known, err
}

// Known walks the paths the program was taught, as the program does, for a
// call at ip in an address space at epoch, with read giving the value of
// each step; it returns the compartment of the path, if one is known. A
// snapshot taken before its path was taught is attributed this way without
// an unwind. It consults what this Tracer taught, even where the kernel's
// LRU map has since forgotten it.
func (t *Tracer) Known(epoch, ip uint64, read func(kind StepKind, arg int64) (uint64, bool)) (uint32, bool) {
	if epoch == 0 {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := recorderNodeKey{Parent: root | epoch, Value: ip}
	for range MaxSteps + 1 {
		n, ok := t.nodes[key]
		if !ok {
			return 0, false
		}
		if n.Kind == uint32(recorderNodeKindNODE_LEAF) {
			return uint32(n.Id), true
		}
		v, ok := read(StepKind(n.Kind), n.Arg)
		if !ok {
			return 0, false
		}
		key = recorderNodeKey{Parent: n.Id, Value: v}
	}
	return 0, false
}

// node puts the node at key, numbering it if it is new, and returns it and
// whether it was known. The kernel may have evicted it (the map is an LRU),
// so it is put even when known.
func (t *Tracer) node(key recorderNodeKey, want recorderNode) (recorderNode, bool, error) {
	n, known := t.nodes[key]
	switch {
	case known && (n.Kind != want.Kind || n.Arg != want.Arg || want.Kind == uint32(recorderNodeKindNODE_LEAF) && n.Id != want.Id):
		// The unwind is deterministic: the same reads cannot lead to
		// different questions or answers.
		return n, true, fmt.Errorf("trace: path node %#x/%#x was kind %d arg %#x, now kind %d arg %#x id %d",
			key.Parent, key.Value, n.Kind, n.Arg, want.Kind, want.Arg, want.Id)
	case !known:
		n = want
		if want.Kind != uint32(recorderNodeKindNODE_LEAF) {
			t.next++
			n.Id = t.next
		}
		t.nodes[key] = n
	}
	if err := t.objs.Paths.Put(key, n); err != nil {
		return n, known, fmt.Errorf("trace: learn a path: %w", err)
	}
	return n, known, nil
}
