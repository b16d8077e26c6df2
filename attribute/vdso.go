package attribute

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// VDSO returns the object of the vDSO. The kernel maps the same image into
// every x86_64 process, so it is read once, from this process's memory: a
// traced process may be gone by the time its vDSO matters.
func (o *Objects) VDSO() *Object {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.vdso != nil {
		return o.vdso
	}
	o.vdso = &Object{ID: ID{Kind: VDSO}, Path: "[vdso]", Runtime: true}
	image, err := readOwnVDSO()
	if err == nil {
		err = o.fill(o.vdso, bytes.NewReader(image))
	}
	o.vdso.Err = err
	return o.vdso
}

// VDSOImage returns a copy of the vDSO's image, as the kernel maps it
// into every x86_64 process.
func VDSOImage() ([]byte, error) { return readOwnVDSO() }

// VDSOFunctions returns the names of the functions this kernel's vDSO
// exports, sorted: what glibc looks up there, and a policy inferred on
// a machine assumes of its kernel (policy.Policy.VDSO).
func VDSOFunctions() ([]string, error) {
	image, err := readOwnVDSO()
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, fmt.Errorf("read the vDSO: %w", err)
	}
	defer f.Close()
	return slices.Sorted(maps.Keys(readDynsyms(f).functions())), nil
}

// readOwnVDSO copies the [vdso] mapping of this process.
func readOwnVDSO() ([]byte, error) {
	start, end, err := ownMapping("[vdso]")
	if err != nil {
		return nil, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return nil, fmt.Errorf("read the vDSO: %w", err)
	}
	defer mem.Close()
	image := make([]byte, end-start)
	if _, err := mem.ReadAt(image, int64(start)); err != nil {
		return nil, fmt.Errorf("read the vDSO: %w", err)
	}
	return image, nil
}

// ownMapping finds the range of this process's mapping called name.
func ownMapping(name string) (start, end uint64, err error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, " "+name) {
			if _, err := fmt.Sscanf(line, "%x-%x", &start, &end); err != nil {
				return 0, 0, fmt.Errorf("/proc/self/maps: %q: %w", line, err)
			}
			return start, end, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, fmt.Errorf("this process has no %s mapping", name)
}
