package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// writeOutput writes data to the file at path, or to standard output when
// path is empty.
func writeOutput(cmd *cobra.Command, path string, data []byte) error {
	if path == "" {
		return write(cmd.OutOrStdout(), data)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// checkOutput checks, before a long run, that the file at path can be
// written: that it is writable where it exists, else that its directory
// takes a new file.
func checkOutput(flag, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return inputErrorf("%s %s: is a directory", flag, path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return inputErrorf("%s %s: %w", flag, path, errors.Unwrap(err))
		}
		return f.Close()
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".syscell-check-*")
	if err != nil {
		return inputErrorf("%s %s: cannot create a file in %s: %w", flag, path, filepath.Dir(path), errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

func write(w io.Writer, data []byte) error {
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a terminal, where binary output would
// garble the screen.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
