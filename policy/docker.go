package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OCIOptions describe the container and host that Docker's conditional
// syscalls entries (includes, excludes) are resolved for.
type OCIOptions struct {
	// Caps are the capabilities the container is granted, as in
	// "CAP_SYS_ADMIN" or "sys_admin"; nil means Docker's defaults
	// (DefaultCaps), an empty slice none at all.
	Caps []string
	// Kernel is the host's kernel version, "X.Y" or a release such as
	// "6.18.4-amd64"; empty means the running kernel's, as Docker does.
	// Results then depend on the machine, so tests should set it.
	Kernel string
}

// hostArch is the name Docker gives the host architecture in includes and
// excludes (runtime.GOARCH through moby's goToNative). syscell's policies
// are for x86_64 hosts, whatever machine imports them.
const hostArch = "amd64"

// DefaultCaps lists the capabilities Docker grants a container by default.
func DefaultCaps() []string {
	return []string{
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER",
		"CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID",
		"CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
	}
}

// dockerHost is OCIOptions made ready to test entries against.
type dockerHost struct {
	caps   map[string]bool
	kernel kernelVersion
}

func (o OCIOptions) host() (*dockerHost, error) {
	h := &dockerHost{caps: map[string]bool{}}
	caps := o.Caps
	if caps == nil {
		caps = DefaultCaps()
	}
	for _, c := range caps {
		h.caps[normalizeCap(c)] = true
	}
	release := o.Kernel
	if release == "" {
		var uts unix.Utsname
		if err := unix.Uname(&uts); err != nil {
			return nil, fmt.Errorf("read the running kernel's version: %w", err)
		}
		release = unix.ByteSliceToString(uts.Release[:])
	}
	var err error
	if h.kernel, err = parseRelease(release); err != nil {
		return nil, err
	}
	return h, nil
}

// normalizeCap spells a capability as Docker's profiles do, accepting the
// short forms docker run's --cap-add accepts.
func normalizeCap(c string) string {
	c = strings.ToUpper(c)
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	return c
}

// keeps reports whether Docker keeps entry e for this host and container.
func (h *dockerHost) keeps(e *ociSyscall) bool {
	return (e.Includes == nil || h.all(e.Includes)) && (e.Excludes == nil || !h.any(e.Excludes))
}

// all reports whether every field given in f holds, as includes requires.
func (h *dockerHost) all(f *ociFilter) bool {
	return (len(f.Arches) == 0 || slices.Contains(f.Arches, hostArch)) &&
		!slices.ContainsFunc(f.Caps, h.lacks) &&
		(f.MinKernel == nil || h.kernel.compare(*f.MinKernel) >= 0)
}

// any reports whether some field given in f holds, as excludes forbids.
func (h *dockerHost) any(f *ociFilter) bool {
	return slices.Contains(f.Arches, hostArch) ||
		slices.ContainsFunc(f.Caps, h.has) ||
		(f.MinKernel != nil && h.kernel.compare(*f.MinKernel) >= 0)
}

// has compares literally, as Docker compares a profile's caps with the
// container's bounding set.
func (h *dockerHost) has(c string) bool   { return h.caps[c] }
func (h *dockerHost) lacks(c string) bool { return !h.caps[c] }

// kernelVersion is what Docker compares of a kernel version: 6.18 of
// 6.18.4-amd64.
type kernelVersion struct{ major, minor uint64 }

func (v kernelVersion) compare(w kernelVersion) int {
	return cmp.Or(cmp.Compare(v.major, w.major), cmp.Compare(v.minor, w.minor))
}

// UnmarshalText reads minKernel when the profile is decoded, as moby does,
// so that a malformed one is an error even in an entry that does not apply.
func (v *kernelVersion) UnmarshalText(b []byte) error {
	var err error
	*v, err = parseMinKernel(string(b))
	return err
}

// parseMinKernel reads minKernel as moby does: exactly "X.Y", not 0.0.
func parseMinKernel(s string) (kernelVersion, error) {
	major, minor, _ := strings.Cut(s, ".")
	v, err := parseVersion(major, minor)
	if err == nil && v == (kernelVersion{}) {
		err = fmt.Errorf("cannot be 0.0")
	}
	if err != nil {
		return kernelVersion{}, fmt.Errorf("minKernel %q: %w (want \"X.Y\")", s, err)
	}
	return v, nil
}

// parseRelease reads the major and minor numbers that start a kernel
// release, ignoring the rest as Docker does ("6.18.4-amd64", "6.18-rc5").
func parseRelease(s string) (kernelVersion, error) {
	major, rest, _ := strings.Cut(s, ".")
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	v, err := parseVersion(major, rest[:end])
	if err != nil {
		return kernelVersion{}, fmt.Errorf("kernel version %q: %w (want \"X.Y\" or a release such as 6.18.4-amd64)", s, err)
	}
	return v, nil
}

func parseVersion(major, minor string) (kernelVersion, error) {
	ma, err := strconv.ParseUint(major, 10, 8)
	if err != nil {
		return kernelVersion{}, fmt.Errorf("bad major version %q", major)
	}
	mi, err := strconv.ParseUint(minor, 10, 8)
	if err != nil {
		return kernelVersion{}, fmt.Errorf("bad minor version %q", minor)
	}
	return kernelVersion{ma, mi}, nil
}
