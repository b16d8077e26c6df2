// Package shebang follows #! lines, as the kernel does when it executes a
// script: the program an exec of a file starts is that file, or the first
// ELF file of the chain of interpreters its #! line names. Both the
// supervisor (which program an exec starts) and the static inference
// (which program to analyse for a command) need the answer.
package shebang

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// MaxInterpreters bounds the chain of interpreters followed; the kernel
// follows at most four (BINPRM_MAX_RECURSION).
const MaxInterpreters = 4

// headSize is how much of a file a #! line is looked for in.
const headSize = 256

// Interpreter returns the interpreter head, the first bytes of a file,
// names on a #! line: "" for a file that is no script, an error for a
// #! line that names none.
func Interpreter(head []byte) (string, error) {
	rest, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return "", nil
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return "", fmt.Errorf("#! names no interpreter")
	}
	return fields[0], nil
}

// Program returns the program an exec of path starts: path, or the
// first file of the chain of #! interpreters that is no script, each
// found under root ("" for /).
func Program(root, path string) (string, error) {
	script := ""
	for range MaxInterpreters {
		interp, err := fileInterpreter(path)
		if err != nil && script != "" {
			return "", fmt.Errorf("%s: #! interpreter: %w", script, err)
		}
		if err != nil || interp == "" {
			return path, err
		}
		script, path = path, root+interp
	}
	return "", fmt.Errorf("%s: more than %d #! interpreters", path, MaxInterpreters)
}

// fileInterpreter is the interpreter the file at path names.
func fileInterpreter(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var head [headSize]byte
	n, _ := f.ReadAt(head[:], 0)
	interp, err := Interpreter(head[:n])
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return interp, nil
}
