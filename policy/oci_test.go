package policy

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/syscalls"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// docker imports Docker's default profile. Tests pin the kernel, which
// would otherwise be the running one.
func docker(t *testing.T, opt OCIOptions) *Policy {
	t.Helper()
	p, _, err := ParseOCI("docker-default.json", readFile(t, "testdata/docker-default.json"), opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	dockerDefaults = OCIOptions{Kernel: "6.18"}
	dockerOldHost  = OCIOptions{Kernel: "4.4.0-210-generic"}
	dockerSysAdmin = OCIOptions{Kernel: "6.18", Caps: append(DefaultCaps(), "sys_admin")}
)

func TestDockerDefault(t *testing.T) {
	var (
		enosys = Action{Kind: Errno, Data: 38}
		x86_64 = syscalls.X86_64
		x86    = syscalls.I386
		x32    = syscalls.X32
	)
	tests := []struct {
		name    string
		opt     OCIOptions
		arch    syscalls.Arch
		syscall string
		arg0    uint64
		want    Action
	}{
		{"read", dockerDefaults, x86_64, "read", 0, ActAllow},
		{"read x86", dockerDefaults, x86, "read", 0, ActAllow},
		{"read x32", dockerDefaults, x32, "read", 0, ActAllow},
		{"arch_prctl, amd64 only", dockerDefaults, x86_64, "arch_prctl", 0, ActAllow},
		{"reboot", dockerDefaults, x86_64, "reboot", 0, ActEPERM},
		{"socket AF_INET", dockerDefaults, x86_64, "socket", 2, ActAllow},
		{"socket 37", dockerDefaults, x86_64, "socket", 37, ActAllow},
		{"socket AF_ALG", dockerDefaults, x86_64, "socket", 38, ActEPERM},
		{"socket 39", dockerDefaults, x86_64, "socket", 39, ActAllow},
		{"socket AF_VSOCK", dockerDefaults, x86_64, "socket", 40, ActEPERM},
		{"socket 41", dockerDefaults, x86_64, "socket", 41, ActAllow},
		{"socket AF_ALG, high bits", dockerDefaults, x86_64, "socket", 1<<32 | 38, ActAllow},
		{"socket AF_ALG, high bits, x86", dockerDefaults, x86, "socket", 1<<32 | 38, ActEPERM},
		{"personality PER_LINUX", dockerDefaults, x86_64, "personality", 0, ActAllow},
		{"personality query", dockerDefaults, x86_64, "personality", 0xffffffff, ActAllow},
		{"personality 1", dockerDefaults, x86_64, "personality", 1, ActEPERM},
		{"clone, fork flags", dockerDefaults, x86_64, "clone", 0x11, ActAllow},
		{"clone CLONE_NEWNS", dockerDefaults, x86_64, "clone", 0x20000, ActEPERM},
		{"clone CLONE_NEWUSER", dockerDefaults, x86_64, "clone", 0x10000000, ActEPERM},
		{"clone3", dockerDefaults, x86_64, "clone3", 0, enosys},
		{"chroot, CAP_SYS_CHROOT", dockerDefaults, x86_64, "chroot", 0, ActAllow},
		{"mount", dockerDefaults, x86_64, "mount", 0, ActEPERM},
		{"ptrace on 6.18", dockerDefaults, x86_64, "ptrace", 0, ActAllow},
		{"ptrace on 4.4", dockerOldHost, x86_64, "ptrace", 0, ActEPERM},
		{"clone3 with CAP_SYS_ADMIN", dockerSysAdmin, x86_64, "clone3", 0, ActAllow},
		{"mount with CAP_SYS_ADMIN", dockerSysAdmin, x86_64, "mount", 0, ActAllow},
		{"clone CLONE_NEWNS with CAP_SYS_ADMIN", dockerSysAdmin, x86_64, "clone", 0x20000, ActAllow},
		{"no caps: chroot", OCIOptions{Kernel: "6.18", Caps: []string{}}, x86_64, "chroot", 0, ActEPERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := docker(t, tt.opt)
			nr, ok := syscalls.Lookup(tt.arch, tt.syscall)
			if !ok {
				t.Fatalf("%s has no %s", tt.arch, tt.syscall)
			}
			got := p.Resolve(p.Arches).Decide(tt.arch.AuditArch(), nr, [MaxArgs]uint64{tt.arg0})
			if got != tt.want {
				t.Errorf("%s(%#x) on %s = %v, want %v", tt.syscall, tt.arg0, tt.arch, got, tt.want)
			}
		})
	}
}

// TestDockerRules checks the shape of the imported rules, not only the
// verdicts they give.
func TestDockerRules(t *testing.T) {
	p := docker(t, dockerDefaults)
	if p.Default != ActEPERM || p.BadArch != ActKillProcess {
		t.Errorf("default %v, bad-arch %v; want errno(1), kill-process", p.Default, p.BadArch)
	}
	if want := []syscalls.Arch{syscalls.X86_64, syscalls.I386, syscalls.X32}; !reflect.DeepEqual(p.Arches, want) {
		t.Errorf("arches %v, want %v", p.Arches, want)
	}
	conds := map[string][][]Cond{}
	for _, r := range p.Rules {
		for _, name := range r.Syscalls {
			conds[name] = append(conds[name], r.Conds)
		}
	}
	want := map[string][][]Cond{
		"socket": {{{Op: Lt, Value: 38}}, {{Op: Eq, Value: 39}}, {{Op: Gt, Value: 40}}},
		"personality": {
			{{Op: Eq, Value: 0}}, {{Op: Eq, Value: 8}}, {{Op: Eq, Value: 0x20000}},
			{{Op: Eq, Value: 0x20008}}, {{Op: Eq, Value: 0xffffffff}},
		},
		"clone":  {{{Op: MaskedEq, Mask: 0x7e020000, Value: 0}}},
		"clone3": {nil},
		"chroot": {nil},
		"ptrace": {nil},
	}
	for name, w := range want {
		if !reflect.DeepEqual(conds[name], w) {
			t.Errorf("%s: conditions %v, want %v", name, conds[name], w)
		}
	}
	if _, ok := conds["reboot"]; ok {
		t.Error("reboot has a rule without CAP_SYS_BOOT")
	}
}

func TestDockerWarnings(t *testing.T) {
	_, warnings, err := ParseOCI("docker-default.json", readFile(t, "testdata/docker-default.json"), dockerDefaults)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`docker-default.json:62: syscall "recv" ignored: no x86 ABI has it`,
		`docker-default.json:62: syscall "riscv_hwprobe" ignored: no x86 ABI has it`,
		`docker-default.json:62: syscall "send" ignored: no x86 ABI has it`,
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
	}
}

// TestDockerGolden keeps testdata/docker-default.toml, Docker's profile in
// syscell's format, in step with the importer and the writer.
func TestDockerGolden(t *testing.T) {
	got := writeTOML(t, docker(t, dockerDefaults))
	const golden = "testdata/docker-default.toml"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := string(readFile(t, golden)); got != want {
		t.Errorf("WriteTOML of Docker's profile differs from %s (go test -run TestDockerGolden -update rewrites it):\n%s", golden, got)
	}
}

// TestOCIRoundTrip takes Docker's profile through every conversion, OCI to
// policy to TOML to policy to OCI JSON to policy, and checks that the
// verdicts never change.
func TestOCIRoundTrip(t *testing.T) {
	for name, opt := range map[string]OCIOptions{"defaults": dockerDefaults, "old host": dockerOldHost, "CAP_SYS_ADMIN": dockerSysAdmin} {
		t.Run(name, func(t *testing.T) {
			imported := docker(t, opt)
			fromTOML := writeAndParse(t, imported)
			var js bytes.Buffer
			if err := fromTOML.WriteOCI(&js); err != nil {
				t.Fatal(err)
			}
			fromOCI, warnings, err := ParseOCI("written.json", js.Bytes(), OCIOptions{Kernel: "2.6", Caps: []string{}})
			if err != nil || len(warnings) > 0 {
				t.Fatalf("ParseOCI of WriteOCI's output: %v, warnings %q\n%s", err, warnings, js.Bytes())
			}
			if d := verdictDiff(imported, fromTOML); d != "" {
				t.Errorf("TOML decides differently: %s", d)
			}
			if d := verdictDiff(imported, fromOCI); d != "" {
				t.Errorf("exported OCI decides differently: %s", d)
			}
			var again bytes.Buffer
			if err := fromOCI.WriteOCI(&again); err != nil || again.String() != js.String() {
				t.Errorf("WriteOCI is not stable (err %v):\n%s\nthen\n%s", err, js.Bytes(), again.Bytes())
			}
		})
	}
}

// ociFailures holds the error expected of each fail_*.json vector: JSON has
// no comments to hold it.
var ociFailures = map[string]string{
	"fail_arch_and_archmap.json": "fail_arch_and_archmap.json:4: both architectures and archMap given; use one",
	"fail_arg_index.json":        "fail_arg_index.json:4: args[0]: index 6 out of range (want 0 to 5)",
	"fail_bad_op.json":           `fail_bad_op.json:4: args[0]: unknown operator "SCMP_CMP_NEQ"`,
	"fail_conflict.json":         `fail_conflict.json:6: conflicting actions for "write": log here, allow at line 4, under the same conditions`,
	"fail_default_action.json":   `fail_default_action.json:2: defaultAction: unknown action "SCMP_ACT_DENY"`,
	"fail_duplicate_key.json":    `fail_duplicate_key.json:4: duplicate key "defaultAction" (first at line 2)`,
	"fail_errno_on_allow.json":   "fail_errno_on_allow.json:5: errnoRet given for SCMP_ACT_ALLOW, which returns no errno",
	"fail_errno_range.json":      "fail_errno_range.json:3: defaultErrnoRet: want an unsigned integer, not number -1",
	"fail_json_syntax.json":      `fail_json_syntax.json:5: JSON syntax: invalid character '"' after object key:value pair`,
	"fail_masked_outside.json":   `fail_masked_outside.json:4: args[0]: condition "arg0 & 0xff == 0x100": value 0x100 has bits outside mask 0xff, so it can never match`,
	"fail_min_kernel.json":       `fail_min_kernel.json:5: syscalls[1]: minKernel "4.8.1": bad minor version "8.1" (want "X.Y")`,
	"fail_missing_default.json":  `fail_missing_default.json:1: missing "defaultAction"`,
	"fail_name_and_names.json":   "fail_name_and_names.json:4: both name and names given; use names",
	"fail_not_object.json":       "fail_not_object.json:3: syscalls: want an array, not object",
	"fail_type.json":             "fail_type.json:9: syscalls[0].args.index: want an unsigned integer, not string",
	"fail_unknown_action.json":   `fail_unknown_action.json:4: unknown action "SCMP_ACT_ALOW"`,
	"fail_unknown_field.json":    `fail_unknown_field.json:8: syscalls[1]: unknown field "include"`,
	"fail_unknown_key.json":      `fail_unknown_key.json:3: unknown key "defaultErrno"`,
}

func TestParseOCIFail(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range vectors(t, "fail_*.json") {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			want, ok := ociFailures[name]
			if !ok {
				t.Fatal("no expected error in ociFailures")
			}
			_, _, err := ParseOCI(name, readFile(t, path), dockerDefaults)
			var perr *Error
			if !errors.As(err, &perr) || err.Error() != want {
				t.Errorf("ParseOCI:\n got %v\nwant *Error %s", err, want)
			}
		})
	}
	for name := range ociFailures {
		if !seen[name] {
			t.Errorf("ociFailures has %s, but testdata does not", name)
		}
	}
}

func TestOCIWarnings(t *testing.T) {
	p, warnings, err := ParseOCI("good_warnings.json", readFile(t, "testdata/good_warnings.json"), dockerDefaults)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"good_warnings.json:3: architecture SCMP_ARCH_AARCH64 ignored: syscell covers x86_64, x86 and x32",
		"good_warnings.json:4: flags [SECCOMP_FILTER_FLAG_LOG] ignored: syscell sets its own",
		"good_warnings.json:5: listenerPath ignored: syscell has its own supervisor",
		`good_warnings.json:7: syscall "arm_fadvise64_64" ignored: no x86 ABI has it`,
		"good_warnings.json:11: rule for [kill] ignored: its action is the default, and runc skips it",
		"good_warnings.json:16: args[0]: valueTwo ignored: only SCMP_CMP_MASKED_EQ uses it",
		"good_warnings.json:23: args compare one argument more than once: each holds on its own (OR), as in runc",
		`good_warnings.json:31: syscall "s390_runtime_instr" ignored: no x86 ABI has it`,
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
	}
	if want := []syscalls.Arch{syscalls.X86_64, syscalls.I386}; !reflect.DeepEqual(p.Arches, want) {
		t.Errorf("arches %v, want %v", p.Arches, want)
	}
	r := p.Resolve(p.Arches)
	for _, tt := range []struct {
		syscall string
		arg0    uint64
		want    Action
	}{
		{"write", 0, ActAllow},
		{"kill", 0, ActEPERM},
		{"socket", 1, ActAllow},
		{"socket", 2, ActEPERM},
		{"personality", 0, ActAllow},
		{"personality", 8, ActAllow},
		{"personality", 9, ActEPERM},
		{"getpid", 0, Action{Kind: KillThread}},
	} {
		nr, _ := syscalls.Lookup(syscalls.X86_64, tt.syscall)
		if got := r.Decide(syscalls.AuditArchX86_64, nr, [MaxArgs]uint64{tt.arg0}); got != tt.want {
			t.Errorf("%s(%d) = %v, want %v", tt.syscall, tt.arg0, got, tt.want)
		}
	}
}

func TestOCI(t *testing.T) {
	p := &Policy{
		Default: Action{Kind: KillProcess},
		Rules: []Rule{
			{Syscalls: []string{"clone"}, Action: ActAllow, Conds: []Cond{{Arg: 0, Op: MaskedEq, Mask: 0xff00, Value: 0x1100}}},
			{Syscalls: []string{"mkdir"}, Action: Action{Kind: Trace, Data: 3}},
			{Syscalls: []string{"getpid"}, Action: ActKillProcess},
		},
	}
	got, err := p.OCI()
	if err != nil {
		t.Fatal(err)
	}
	three := uint(3)
	want := &specs.LinuxSeccomp{
		DefaultAction: specs.ActKillProcess,
		Architectures: []specs.Arch{specs.ArchX86_64},
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"mkdir"}, Action: specs.ActTrace, ErrnoRet: &three},
			{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 0xff00, ValueTwo: 0x1100, Op: specs.OpMaskedEqual},
			}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OCI:\n got %+v\nwant %+v", got, want)
	}
}

func TestOCIErrors(t *testing.T) {
	tests := []struct {
		name   string
		arches []syscalls.Arch
		rules  []Rule
		want   string
	}{
		{"x86 without x86_64", []syscalls.Arch{syscalls.I386}, nil,
			"p.toml: cannot export: the policy does not cover x86_64, which libseccomp always covers on an x86_64 host"},
		{"argument compared twice", nil, []Rule{
			{Syscalls: []string{"socket"}, Action: ActAllow, Conds: []Cond{{Op: Ne, Value: 38}, {Op: Ne, Value: 40}}, Pos: Pos{"p.toml", 4}},
		}, "p.toml:4: cannot export: arg0 is compared twice, which runc reads as OR"},
		{"default action beside another", nil, []Rule{
			{Syscalls: []string{"socket"}, Action: ActAllow, Conds: []Cond{{Value: 2}}, Pos: Pos{"p.toml", 4}},
			{Syscalls: []string{"socket"}, Action: ActEPERM, Pos: Pos{"p.toml", 9}},
		}, `p.toml:9: cannot export: runc skips rules with the default action, but other rules name "socket" too`},
		{"invalid", nil, []Rule{{Syscalls: []string{"mkdri"}, Pos: Pos{"p.toml", 4}}},
			`export OCI profile: p.toml:4: unknown syscall "mkdri"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Policy{Default: ActEPERM, Arches: tt.arches, Rules: tt.rules, Source: "p.toml"}
			if _, err := p.OCI(); err == nil || err.Error() != tt.want {
				t.Errorf("OCI = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestOCIDropsDefaultRules checks that a rule with the default action and
// no other rule on its syscall, which changes nothing, is left out.
func TestOCIDropsDefaultRules(t *testing.T) {
	p := &Policy{Default: ActEPERM, Rules: []Rule{
		{Syscalls: []string{"read"}, Action: ActAllow},
		{Syscalls: []string{"kill"}, Action: ActEPERM},
	}}
	s, err := p.OCI()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Syscalls) != 1 || !reflect.DeepEqual(s.Syscalls[0].Names, []string{"read"}) {
		t.Errorf("syscalls %+v, want only read", s.Syscalls)
	}
}

func TestDockerHostKeeps(t *testing.T) {
	host, err := OCIOptions{Kernel: "5.10", Caps: []string{"CAP_KILL", "net_admin"}}.host()
	if err != nil {
		t.Fatal(err)
	}
	v := func(major, minor uint64) *kernelVersion { return &kernelVersion{major, minor} }
	tests := []struct {
		name               string
		includes, excludes *ociFilter
		want               bool
	}{
		{"no filters", nil, nil, true},
		{"includes amd64", &ociFilter{Arches: []string{"arm64", "amd64"}}, nil, true},
		{"includes x86_64, not Docker's name", &ociFilter{Arches: []string{"x86_64", "x86", "x32"}}, nil, false},
		{"includes granted caps", &ociFilter{Caps: []string{"CAP_KILL", "CAP_NET_ADMIN"}}, nil, true},
		{"includes a cap not granted", &ociFilter{Caps: []string{"CAP_KILL", "CAP_SYS_ADMIN"}}, nil, false},
		{"includes caps compared literally", &ociFilter{Caps: []string{"kill"}}, nil, false},
		{"includes older kernel", &ociFilter{MinKernel: v(5, 9)}, nil, true},
		{"includes same kernel", &ociFilter{MinKernel: v(5, 10)}, nil, true},
		{"includes newer kernel", &ociFilter{MinKernel: v(5, 11)}, nil, false},
		{"includes all, one fails", &ociFilter{Arches: []string{"amd64"}, Caps: []string{"CAP_KILL"}, MinKernel: v(6, 0)}, nil, false},
		{"excludes amd64", nil, &ociFilter{Arches: []string{"amd64"}}, false},
		{"excludes s390", nil, &ociFilter{Arches: []string{"s390"}}, true},
		{"excludes a granted cap", nil, &ociFilter{Caps: []string{"CAP_SYS_ADMIN", "CAP_KILL"}}, false},
		{"excludes caps not granted", nil, &ociFilter{Caps: []string{"CAP_SYS_ADMIN"}}, true},
		{"excludes older kernel", nil, &ociFilter{MinKernel: v(4, 8)}, false},
		{"excludes newer kernel", nil, &ociFilter{MinKernel: v(6, 1)}, true},
		{"includes hold, excludes one", &ociFilter{Caps: []string{"CAP_KILL"}}, &ociFilter{MinKernel: v(3, 0)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &ociSyscall{Includes: tt.includes, Excludes: tt.excludes}
			if got := host.keeps(e); got != tt.want {
				t.Errorf("keeps = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseRelease(t *testing.T) {
	tests := []struct {
		in   string
		want kernelVersion
		err  bool
	}{
		{"6.18", kernelVersion{6, 18}, false},
		{"6.18.44-fc-v445", kernelVersion{6, 18}, false},
		{"4.4.0-210-generic", kernelVersion{4, 4}, false},
		{"3.12-rc5", kernelVersion{3, 12}, false},
		{"6", kernelVersion{}, true},
		{"", kernelVersion{}, true},
		{"six.1", kernelVersion{}, true},
		{"6.x", kernelVersion{}, true},
	}
	for _, tt := range tests {
		got, err := parseRelease(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("parseRelease(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseMinKernel(t *testing.T) {
	for in, ok := range map[string]bool{"4.8": true, "10.0": true, "4": false, "4.8.1": false, "0.0": false, "4.256": false, "": false} {
		if _, err := parseMinKernel(in); (err == nil) != ok {
			t.Errorf("parseMinKernel(%q): error %v, want ok %v", in, err, ok)
		}
	}
}

func TestRunningKernel(t *testing.T) {
	host, err := OCIOptions{}.host()
	if err != nil {
		t.Fatal(err)
	}
	if host.kernel.major < 3 {
		t.Errorf("running kernel read as %v", host.kernel)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "p.toml")
	json := filepath.Join(dir, "p.json")
	for path, data := range map[string][]byte{
		toml: readFile(t, "testdata/good_example.toml"),
		json: append([]byte("\n  "), readFile(t, "testdata/good_warnings.json")...),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	p, warnings, err := Load(toml, OCIOptions{})
	if err != nil || warnings != nil || len(p.Compartments) != 1 || p.Source != toml {
		t.Errorf("Load(TOML) = %+v, %q, %v", p, warnings, err)
	}
	p, warnings, err = Load(json, dockerDefaults)
	if err != nil || len(warnings) != 8 || len(p.Rules) == 0 || p.Source != json {
		t.Errorf("Load(JSON) = %+v, %q, %v", p, warnings, err)
	}
	if _, _, err := Load(filepath.Join(dir, "missing"), OCIOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}
