package cell

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/internal/shebang"
)

// ErrNotAuditable is wrapped by the errors of programs the loader would
// run without the audit library, and so without their filter: statically
// linked programs, which have no loader, and programs whose execution
// raises privileges, for which the loader ignores LD_AUDIT.
var ErrNotAuditable = errors.New("the dynamic loader would not load the audit library into it")

// checkExecutable makes sure that the loader will load the audit library
// into path, following #! interpreters.
func checkExecutable(path string) error {
	_, err := checkChain("", path, true)
	return err
}

// checkExecuted is checkExecutable for an image the program executes under
// its filter: no_new_privs, which the filter set, keeps a set-user-ID or
// file-capability program from raising privileges, so the loader loads
// the library into it too. root is the program's root directory, under
// which interpreters are found. It returns the program the exec loads:
// path, or the ELF file at the end of its chain of interpreters.
func checkExecuted(root, path string) (string, error) {
	return checkChain(root, path, false)
}

// checkChain checks path and the #! interpreters it names, found under
// root, and returns the last, the program; privileges says whether
// programs that raise them are refused.
func checkChain(root, path string, privileges bool) (string, error) {
	for range shebang.MaxInterpreters {
		interp, err := checkFile(path, privileges)
		if err != nil {
			return "", err
		}
		if interp == "" {
			return path, nil
		}
		path = root + interp
	}
	return "", fmt.Errorf("cell: %s: more than %d #! interpreters", path, shebang.MaxInterpreters)
}

// checkFile checks one file, and returns the interpreter a script names.
func checkFile(path string, privileges bool) (string, error) {
	if privileges {
		if err := checkPrivileges(path); err != nil {
			return "", err
		}
	}
	var head [256]byte
	fd, n, err := readHead(path, head[:])
	if err != nil {
		return "", fmt.Errorf("cell: %w", err)
	}
	defer unix.Close(fd)
	if interp, err := shebang.Interpreter(head[:n]); interp != "" || err != nil {
		if err != nil {
			return "", fmt.Errorf("cell: %s: %w", path, err)
		}
		return interp, nil
	}
	dynamic, err := hasInterp(fd, head[:n])
	if err != nil {
		return "", fmt.Errorf("cell: %s is neither an ELF program nor a #! script: %w", path, err)
	}
	if !dynamic {
		return "", fmt.Errorf("cell: %s is statically linked: %w", path, ErrNotAuditable)
	}
	return "", nil
}

// hasInterp says whether the 64-bit little-endian ELF file open at fd,
// whose first bytes are head, names a program interpreter (PT_INTERP): whether the
// kernel starts it through the dynamic loader. It reads the ELF header and
// the program headers only: an exec is checked while its caller waits.
func hasInterp(fd int, head []byte) (bool, error) {
	le := binary.LittleEndian
	if len(head) < 64 || !bytes.HasPrefix(head, []byte(elf.ELFMAG)) || elf.Class(head[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(head[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return false, errors.New("not a 64-bit little-endian ELF file")
	}
	phoff, phentsize, phnum := le.Uint64(head[32:]), int(le.Uint16(head[54:])), int(le.Uint16(head[56:]))
	if phentsize < 56 || phnum > 1024 {
		return false, fmt.Errorf("program headers of %d bytes, %d of them", phentsize, phnum)
	}
	phdrs := make([]byte, phentsize*phnum)
	if n, err := unix.Pread(fd, phdrs, int64(phoff)); err != nil || n < len(phdrs) {
		return false, fmt.Errorf("program headers: %d bytes of %d read: %v", n, len(phdrs), err)
	}
	for i := range phnum {
		if elf.ProgType(le.Uint32(phdrs[i*phentsize:])) == elf.PT_INTERP {
			return true, nil
		}
	}
	return false, nil
}

// checkPrivileges refuses a program whose execution raises privileges,
// for which the loader ignores LD_AUDIT.
func checkPrivileges(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("cell: %s: %w", path, err)
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return fmt.Errorf("cell: %s is set-user-ID or set-group-ID: %w", path, ErrNotAuditable)
	}
	if _, err := unix.Getxattr(path, "security.capability", nil); err == nil {
		return fmt.Errorf("cell: %s has file capabilities: %w", path, ErrNotAuditable)
	}
	return nil
}
