package cell

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The supervisor reads small files of /proc, and the first bytes of
// executed programs, while a call waits: with plain system calls, an
// open, reads and a close, where package os would add a poller
// registration, an fstat and fcntls to every open.

// readAll reads the whole file at path.
func readAll(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	return readFrom(fd, path)
}

// readFrom reads what is left of the file at fd, opened from path.
func readFrom(fd int, path string) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readHead reads the first bytes of the file at path into buf, and
// returns the open file's descriptor for more reads, which the caller
// closes.
func readHead(path string, buf []byte) (fd, n int, err error) {
	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("open %s: %w", path, err)
	}
	n, err = unix.Pread(fd, buf, 0)
	if err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return fd, n, nil
}
