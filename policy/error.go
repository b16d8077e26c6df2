package policy

import (
	"bytes"
	"fmt"
)

// Error is a problem in a policy, with the place it was written, so that a
// command can print "file:line: problem" and tell bad input from failure.
type Error struct {
	Pos Pos
	Msg string
}

// Error formats the problem as "file:line: problem".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errorAt(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// lineAt is the 1-based line of byte offset off in data. Offsets past the end
// count as the last line, so that a truncated input still gets a place.
func lineAt(data []byte, off int) int {
	off = max(0, min(off, len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}
