package cell

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/policy"
)

// Compartments that name no file, as package record writes them: the
// runtime's own calls (start-up, exit), and anonymous executable memory.
const (
	runtimeCompartment  = "[runtime]"
	anonExecCompartment = "[anon-exec]"
)

// identity names a compartment's objects. The rule, which the audit
// library applies to the objects it sees (audit/object.c) and the
// supervisor to the objects it unwinds through: a compartment with a
// path (or, without one, a name holding a slash) matches the file found
// there when syscell starts, by device and inode, whatever path the
// loader finds it by, and, if no file is there yet, the objects of its
// build-id with its file name, or nothing without a build-id; one with a
// build-id matches that build-id; one with both matches the objects that
// have both, as package record tells compartments apart; one with neither
// matches the objects whose soname or file name is its name. Runtime
// objects (libc, the loader, the vDSO) belong to no compartment, and an
// object belongs to the first compartment, in policy order, that matches
// it.
type identity struct {
	buildID string
	// file says that dev and ino name the compartment's file.
	file     bool
	dev, ino uint64
	name     string
	// nothing marks a compartment that matches no object.
	nothing bool
}

// identityOf resolves how c names its objects.
func identityOf(c policy.Compartment) (identity, error) {
	if c.Name == runtimeCompartment || c.Name == anonExecCompartment {
		return identity{nothing: true}, nil
	}
	id := identity{buildID: strings.ToLower(c.BuildID)}
	path := c.Path
	if path == "" && strings.ContainsRune(c.Name, '/') {
		path = c.Name
	}
	if path == "" && id.buildID == "" {
		if strings.ContainsAny(c.Name, "\n; ") {
			return identity{}, fmt.Errorf("cell: compartment %q: a name matched against files cannot hold a space, a newline or a semicolon", c.Name)
		}
		id.name = c.Name
		return id, nil
	}
	if path == "" {
		return id, nil
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, fs.ErrNotExist) && id.buildID != "" && !strings.ContainsAny(path, "\n; ") {
		// A program the command builds and runs (make running gcc,
		// then the program it built): the same build, loaded under
		// the same file name.
		id.name = filepath.Base(path)
		return id, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return identity{nothing: true}, nil
	}
	if err != nil {
		return identity{}, fmt.Errorf("cell: compartment %q: %s: %w", c.Name, path, err)
	}
	id.file, id.dev, id.ino = true, st.Dev, st.Ino
	return id, nil
}

// matches says whether o belongs to the compartment, runtime aside.
func (id identity) matches(o *attribute.Object) bool {
	switch {
	case id.nothing, o.Kind != attribute.File:
		return false
	case id.buildID != "" && o.BuildID != id.buildID:
		return false
	case id.file && (o.Dev != id.dev || o.Ino != id.ino):
		return false
	case id.name != "":
		return o.Soname == id.name || filepath.Base(o.Path) == id.name
	}
	return true
}

// line is how the identity travels to the audit library (audit/config.c):
// "BUILD-ID DEV INO NAME", each "-" when absent, or "nothing".
func (id identity) line() string {
	if id.nothing {
		return "nothing"
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	dev, ino := "-", "-"
	if id.file {
		dev, ino = fmt.Sprint(id.dev), fmt.Sprint(id.ino)
	}
	return strings.Join([]string{dash(id.buildID), dev, ino, dash(id.name)}, " ")
}

// identities are a policy's compartments, in slot order.
type identities struct {
	names []string
	ids   []identity
}

func newIdentities(p *policy.Policy) (*identities, error) {
	ids := &identities{}
	for _, c := range p.Compartments {
		id, err := identityOf(c)
		if err != nil {
			return nil, err
		}
		ids.names = append(ids.names, c.Name)
		ids.ids = append(ids.ids, id)
	}
	return ids, nil
}

// compartmentOf returns the compartment o belongs to, if any.
// slot is the window slot of compartment name, -1 for none.
func (ids *identities) slot(name string) int { return slices.Index(ids.names, name) }

func (ids *identities) compartmentOf(o *attribute.Object) (string, bool) {
	if o.Runtime {
		return "", false
	}
	for i, id := range ids.ids {
		if id.matches(o) {
			return ids.names[i], true
		}
	}
	return "", false
}

// Code is a compartment's only where the loader mapped it: the audit
// library seals each object's code as the loader maps it (audit/object.c),
// so a mapping of an object's file that is not sealed was mapped by
// something else, a copy the program made, which it could write at any
// time; and a page of a mapping written since it was mapped (a private
// copy written before it was sealed, code patched through
// /proc/PID/mem) holds no file's code. Either is anonymous executable
// memory to the supervisor, whatever file backs it: the identity of code
// is its load, not its file. A copy of an object's file that is sealed
// and never written holds nothing but that object's code, which any
// library could jump into anyway (docs/THREAT-MODEL.md).

// loadedCode returns space with every file mapping that does not hold
// its file's code as the loader mapped it replaced by anonymous
// executable memory, as /proc/PID/smaps shows the process's mappings,
// and the mappings it found sealed and unwritten. sealed says that the
// audit library seals what the loader maps (mseal worked): where it
// could not, a mapping need not be sealed. Where known, from an earlier
// read of the same image, holds every file mapping of space, the pages
// of those mappings are asked whether they were written since, instead
// (sealedCode); with no earlier read, reported, the ranges the audit
// library sealed and reported in this image, stands for one
// (reportedCode). execs is the process's count of execs when its
// mappings were read.
func loadedCode(pid int, space *attribute.Space, objs *attribute.Objects, sealed bool, known *sealedCode, execs uint64, reported map[compartment.Range]bool) (*attribute.Space, *sealedCode, error) {
	image, err := auxv(pid)
	if err != nil {
		return nil, nil, err
	}
	if known == nil && reported != nil {
		known = reportedCode(space, image, execs, reported)
	}
	if sealed && known.holds(space, image, execs) {
		return known.recheck(pid, space, objs)
	}
	b, err := readAll(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, nil, err
	}
	vmas := parseSmaps(b)
	out, code := attribute.NewSpace(objs), &sealedCode{image: image, execs: execs, maps: map[codeKey]bool{}}
	for _, m := range space.Mappings() {
		v, ok := vmas[m.Start]
		switch {
		case m.Object.Kind != attribute.File:
		case !asLoaded(m.Object, v, ok, sealed):
			m.Object = attribute.AnonExecObject()
		case v.sealed:
			code.maps[keyOf(m)] = true
		}
		out.Map(m)
	}
	return out, code, nil
}

// sealedCode are the mappings of code a read of smaps found sealed and
// holding their file's code as the loader mapped it, and the image they
// were read in: its auxiliary vector, which only an exec sets, and the
// count of execs the supervisor let the process make (two execs of one
// program without address randomization may leave the same vector). A sealed
// mapping can be neither unmapped, moved nor remapped: where a later read
// of the same image lists one with the same bounds, offset and file, it
// is still that mapping, and what is left to ask is whether a page of it
// was written since. /proc/PID/pagemap tells that of its pages alone,
// where smaps walks every mapping of the process (0.75 ms of a 1 ms read
// of a process with 137 mappings): a process whose loader's epoch moved
// with no new object (OpenSSL dlopens itself at start; a server dlopens
// a module it has) has its mappings read again for a fifth of the cost.
type sealedCode struct {
	image []byte
	execs uint64
	maps  map[codeKey]bool
}

type codeKey struct{ start, end, offset, dev, ino uint64 }

func keyOf(m attribute.Mapping) codeKey {
	return codeKey{m.Start, m.End, m.Offset, m.Object.Dev, m.Object.Ino}
}

// reportedCode is what the audit library sealed in the program's first
// image and reported at start, the filter's layout (every compartment's
// code, the runtime's), as a first read of the image would have found
// it: sealed before the report, a range can be neither unmapped, moved
// nor remapped since, so a mapping at exactly its bounds is still the
// one sealed, of the same file, and what is left to ask of it is whether
// a page was written (recheck), as for a second read. image and execs
// are the caller's to vouch for: the image the report came from, with
// no exec since. A mapping the report does not name (an object in no
// compartment, one dlopened since) leaves the read to smaps.
func reportedCode(space *attribute.Space, image []byte, execs uint64, reported map[compartment.Range]bool) *sealedCode {
	code := &sealedCode{image: image, execs: execs, maps: map[codeKey]bool{}}
	for _, m := range space.Mappings() {
		if m.Object.Kind == attribute.File && reported[compartment.Range{Start: m.Start, End: m.End}] {
			code.maps[keyOf(m)] = true
		}
	}
	return code
}

// reportedRanges are the code ranges the audit library reported at
// start: each compartment's objects' and the runtime's.
func reportedRanges(l compartment.Layout) map[compartment.Range]bool {
	out := map[compartment.Range]bool{}
	for _, rs := range l.Text {
		for _, r := range rs {
			out[r] = true
		}
	}
	for _, r := range l.Runtime {
		out[r] = true
	}
	return out
}

// holds says whether every file mapping of space is a sealed mapping of
// known's image.
func (known *sealedCode) holds(space *attribute.Space, image []byte, execs uint64) bool {
	if known == nil || known.execs != execs || !bytes.Equal(known.image, image) {
		return false
	}
	for _, m := range space.Mappings() {
		if m.Object.Kind == attribute.File && !known.maps[keyOf(m)] {
			return false
		}
	}
	return true
}

// recheck is loadedCode for a space known holds: a mapping a page of
// which was written since is anonymous executable memory, unless it is
// the runtime's (asLoaded), and no longer known. The image is read
// again after the pages: an exec meanwhile makes the read fail.
func (known *sealedCode) recheck(pid int, space *attribute.Space, objs *attribute.Objects) (*attribute.Space, *sealedCode, error) {
	pages, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, nil, err
	}
	defer pages.Close()
	out, code := attribute.NewSpace(objs), &sealedCode{image: known.image, execs: known.execs, maps: map[codeKey]bool{}}
	for _, m := range space.Mappings() {
		if m.Object.Kind == attribute.File {
			written, err := writtenPages(pages, m.Start, m.End)
			if err != nil {
				return nil, nil, err
			}
			if written && !m.Object.Runtime {
				m.Object = attribute.AnonExecObject()
			} else {
				code.maps[keyOf(m)] = true
			}
		}
		out.Map(m)
	}
	if image, err := auxv(pid); err != nil || !bytes.Equal(image, known.image) {
		return nil, nil, fmt.Errorf("process %d executed a program while its mappings were read", pid)
	}
	return out, code, nil
}

// Bits of a /proc/PID/pagemap entry: the page is present, swapped, or a
// page of a file (or shared anonymous memory).
const (
	pagePresent = 1 << 63
	pageSwapped = 1 << 62
	pageFile    = 1 << 61
)

// writtenPages says whether a page of [start, end) is anonymous: a page
// of a private file mapping is, once written. Pages never touched are
// not present, and hold the file's bytes when they are.
func writtenPages(pages *os.File, start, end uint64) (bool, error) {
	buf := make([]byte, 8*((end-start)/pageSize))
	if n, err := pages.ReadAt(buf, int64(8*(start/pageSize))); n < len(buf) {
		return false, fmt.Errorf("%s at %#x: %w", pages.Name(), start, err)
	}
	for off := 0; off < len(buf); off += 8 {
		e := binary.LittleEndian.Uint64(buf[off:])
		if e&pageSwapped != 0 || e&pagePresent != 0 && e&pageFile == 0 {
			return true, nil
		}
	}
	return false, nil
}

// asLoaded says whether a mapping of obj's file, v as smaps shows it
// (ok: smaps has it), holds obj's code as the loader mapped it. The
// runtime's written pages are libc's wrappers, which the audit library
// patched before sealing them (audit/gate.c): its calls are attributed
// by unwinding whatever code makes them, so writing it gives no
// compartment's rights.
func asLoaded(obj *attribute.Object, v vma, ok, sealed bool) bool {
	if !ok || sealed && !v.sealed {
		return false
	}
	return !v.written || obj.Runtime
}

// vma is what loadedCode needs of a mapping: whether any of its pages
// is anonymous (written since the file was mapped, for a private
// mapping of a file), and whether it is sealed.
type vma struct {
	written, sealed bool
}

// parseSmaps reads /proc/PID/smaps text into each mapping's vma, by start
// address. A mapping's header line ("START-END PERMS ...") is followed by
// "Key: value" lines, "Anonymous: N kB" and "VmFlags: ... sl ..." among
// them.
func parseSmaps(b []byte) map[uint64]vma {
	out := map[uint64]vma{}
	var start uint64
	for line := range strings.Lines(string(b)) {
		key, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		v := out[start]
		switch {
		case key == "Anonymous:":
			v.written = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")) != "0"
		case key == "VmFlags:":
			v.sealed = slices.Contains(strings.Fields(rest), "sl")
		case !strings.HasSuffix(key, ":"):
			lo, _, _ := strings.Cut(key, "-")
			if n, err := strconv.ParseUint(lo, 16, 64); err == nil {
				start = n
			}
			continue
		}
		out[start] = v
	}
	return out
}
