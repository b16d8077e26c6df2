package cell

import (
	"os"
	"slices"
	"strings"
)

// Hardware is what the CPU and kernel offer that would close what
// deciding by instruction pointer and stack leaves open
// (docs/THREAT-MODEL.md): memory protection keys, with which call gates
// could keep each library out of the others' memory and stubs, and
// user-space shadow stacks, against which the supervisor could check
// every return address it unwinds. syscell uses neither yet: it reports
// them.
type Hardware struct {
	// ProtectionKeys says that user space may use protection keys (the
	// CPU's pku, enabled by the kernel: ospke).
	ProtectionKeys bool
	// ShadowStacks says that the kernel supports user-space shadow
	// stacks on this CPU (user_shstk).
	ShadowStacks bool
}

// ProbeHardware reads the CPU's flags from /proc/cpuinfo.
func ProbeHardware() Hardware {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return Hardware{}
	}
	return hardwareOf(string(b))
}

// hardwareOf reads the first flags line of /proc/cpuinfo text.
func hardwareOf(cpuinfo string) Hardware {
	for line := range strings.Lines(cpuinfo) {
		if name, flags, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			f := strings.Fields(flags)
			return Hardware{
				ProtectionKeys: slices.Contains(f, "pku") && slices.Contains(f, "ospke"),
				ShadowStacks:   slices.Contains(f, "user_shstk"),
			}
		}
	}
	return Hardware{}
}
