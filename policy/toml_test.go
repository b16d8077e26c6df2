package policy

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/syscell/syscell/syscalls"
)

func TestParseExample(t *testing.T) {
	got := mustParse(t, "testdata/good_example.toml")
	at := func(line int) Pos { return Pos{File: "good_example.toml", Line: line} }
	want := &Policy{
		Default: ActEPERM,
		BadArch: ActKillProcess,
		Arches:  []syscalls.Arch{syscalls.X86_64},
		Rules: []Rule{
			{Syscalls: []string{"read", "write", "close"}, Action: ActAllow, Pos: at(7)},
			{
				Syscalls: []string{"socket"},
				Action:   ActAllow,
				Conds:    []Cond{{Arg: 0, Op: Ne, Value: 38}, {Arg: 0, Op: Ne, Value: 40}},
				Pos:      at(11),
			},
		},
		Compartments: []Compartment{{
			Name:     "libfoo.so.1",
			Path:     "/usr/lib/x86_64-linux-gnu/libfoo.so.1",
			BuildID:  "3f2a",
			Syscalls: []string{"getpid", "write"},
			Pos:      at(16),
		}},
		Source: "good_example.toml",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseEverything(t *testing.T) {
	p := mustParse(t, "testdata/good_everything.toml")
	r := p.Resolve(p.Arches)
	tests := []struct {
		arch    syscalls.Arch
		syscall string
		args    [MaxArgs]uint64
		want    Action
	}{
		{syscalls.X86_64, "read", [MaxArgs]uint64{}, ActKillProcess},
		{syscalls.X86_64, "ptrace", [MaxArgs]uint64{}, Action{Kind: Trace, Data: 7}},
		{syscalls.I386, "chown32", [MaxArgs]uint64{}, Action{Kind: Trace, Data: 7}},
		{syscalls.X86_64, "openat", [MaxArgs]uint64{0, 0, 0o101, 0, 0xffffffff}, Action{Kind: Log}},
		{syscalls.X86_64, "openat", [MaxArgs]uint64{0, 0, 0o101, 0, 1 << 32}, ActKillProcess},
		{syscalls.I386, "openat", [MaxArgs]uint64{0, 0, 0o101, 0, 1 << 32}, Action{Kind: Log}},
		{syscalls.X86_64, "kill", [MaxArgs]uint64{1, 32}, Action{Kind: Trap}},
		{syscalls.X86_64, "mkdir", [MaxArgs]uint64{0, 0o644}, Action{Kind: UserNotify}},
		{syscalls.X86_64, "personality", [MaxArgs]uint64{math64Minus1}, Action{Kind: KillThread}},
		{syscalls.X32, "unlink", [MaxArgs]uint64{}, Action{Kind: Errno, Data: 13}},
		{syscalls.X32, "arch_prctl", [MaxArgs]uint64{}, ActAllow},
	}
	for _, tt := range tests {
		nr, ok := syscalls.Lookup(tt.arch, tt.syscall)
		if !ok {
			t.Fatalf("%s has no %s", tt.arch, tt.syscall)
		}
		if got := r.Decide(tt.arch.AuditArch(), nr, tt.args); got != tt.want {
			t.Errorf("%s %s%v = %v, want %v", tt.arch, tt.syscall, tt.args, got, tt.want)
		}
	}
	if p.BadArch != (Action{Kind: Errno, Data: 38}) {
		t.Errorf("bad-arch = %v, want errno(38)", p.BadArch)
	}
	if want := []string{"write", "read", "nop"}; !slices.Equal(p.IOURing, want) {
		t.Errorf("io_uring = %v, want %v", p.IOURing, want)
	}
	reach := map[string][]string{}
	for _, c := range p.Compartments {
		reach[c.Name] = c.Reach
	}
	if want := []string{"getpid", "openat", "read"}; !slices.Equal(reach["libc.so.6"], want) || reach["main"] != nil {
		t.Errorf("reach = %v, want libc.so.6's %v and main's unknown", reach, want)
	}
	if want := []string{"epoll_wait", "accept4"}; !slices.Equal(p.ServingFrom, want) {
		t.Errorf("serving-from = %v, want %v", p.ServingFrom, want)
	}
	if want := []string{"__vdso_time", "__vdso_gettimeofday"}; !slices.Equal(p.VDSO, want) {
		t.Errorf("vdso = %v, want %v", p.VDSO, want)
	}
	if got := p.Compartments[1].Serving; !slices.Equal(got, []string{"getpid"}) || p.Compartments[0].Serving != nil {
		t.Errorf("serving = %v and %v, want main's unnarrowed and libc.so.6's [getpid]", p.Compartments[0].Serving, got)
	}
}

const math64Minus1 = 1<<64 - 1

// TestParseFail checks that every fail_*.toml vector is rejected with the
// error its first line gives, as an *Error.
func TestParseFail(t *testing.T) {
	for _, path := range vectors(t, "fail_*.toml") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data := readFile(t, path)
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# error: ")
			if !ok {
				t.Fatalf("first line %q does not give the expected error", first)
			}
			_, err := Parse(filepath.Base(path), data)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse = %v (%T), want *Error %q", err, err, want)
			}
			if err.Error() != want {
				t.Errorf("Parse:\n got %s\nwant %s", err, want)
			}
		})
	}
}

// TestRoundTrip writes every good policy and reads it back: the result
// decides alike, keeps its compartments, and writes the same text again.
func TestRoundTrip(t *testing.T) {
	for _, path := range vectors(t, "good_*.toml") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p := mustParse(t, path)
			again := writeAndParse(t, p)
			if d := verdictDiff(p, again); d != "" {
				t.Errorf("decides differently after WriteTOML: %s", d)
			}
			if p.Default != again.Default || p.BadArch != again.BadArch || !reflect.DeepEqual(p.Arches, again.Arches) ||
				!reflect.DeepEqual(sortedSet(p.IOURing), sortedSet(again.IOURing)) ||
				!reflect.DeepEqual(sortedSet(p.ServingFrom), sortedSet(again.ServingFrom)) {
				t.Errorf("header changed: %v %v %v %v, then %v %v %v %v", p.Default, p.BadArch, p.Arches, p.IOURing,
					again.Default, again.BadArch, again.Arches, again.IOURing)
			}
			if got, want := compartmentSets(again), compartmentSets(p); !reflect.DeepEqual(got, want) {
				t.Errorf("compartments changed:\n got %v\nwant %v", got, want)
			}
			if first, second := writeTOML(t, p), writeTOML(t, again); first != second {
				t.Errorf("WriteTOML is not stable:\n%s\nthen\n%s", first, second)
			}
		})
	}
}

func writeTOML(t *testing.T, p *Policy) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteTOML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func writeAndParse(t *testing.T, p *Policy) *Policy {
	t.Helper()
	text := writeTOML(t, p)
	again, err := Parse("written.toml", []byte(text))
	if err != nil {
		t.Fatalf("Parse of WriteTOML's output: %v\n%s", err, text)
	}
	return again
}

// compartmentSets describes compartments without their order or positions.
func compartmentSets(p *Policy) map[string]string {
	m := map[string]string{}
	for _, c := range p.Compartments {
		m[c.Name] = c.Path + " " + c.BuildID + " " + strings.Join(slices.Sorted(slices.Values(c.Syscalls)), ",")
		if c.Reach != nil {
			m[c.Name] += " reach " + strings.Join(slices.Sorted(slices.Values(c.Reach)), ",")
		}
		if c.Serving != nil {
			m[c.Name] += " serving " + strings.Join(slices.Sorted(slices.Values(c.Serving)), ",")
		}
	}
	return m
}

func TestWriteTOML(t *testing.T) {
	p := &Policy{
		Default: ActEPERM,
		BadArch: ActKillProcess,
		Arches:  []syscalls.Arch{syscalls.X32, syscalls.X86_64, syscalls.X32},
		Rules: []Rule{
			{Syscalls: []string{"write", "read"}, Action: ActAllow},
			{Syscalls: []string{"socket"}, Action: ActAllow, Conds: []Cond{{Arg: 0, Op: Ne, Value: 40}, {Arg: 0, Op: Ne, Value: 38}}},
			{Syscalls: []string{"close", "read"}, Action: ActAllow},
			{Syscalls: []string{"clone3"}, Action: Action{Kind: Errno, Data: 38}},
			{Syscalls: []string{"socket"}, Action: ActAllow, Conds: []Cond{{Arg: 0, Op: Ne, Value: 38}, {Arg: 0, Op: Ne, Value: 40}}},
			{Syscalls: []string{"clone"}, Action: ActAllow, Conds: []Cond{{Arg: 0, Op: MaskedEq, Mask: 0x7e020000}}},
		},
		Compartments: []Compartment{
			{Name: "main", Syscalls: []string{}},
			{Name: "libfoo.so.1", Path: `/opt/"odd" dir/libfoo.so.1`, BuildID: "3f2a", Syscalls: []string{"write", "getpid"}},
			{Name: "libbar.so", Syscalls: []string{"getpid"}},
		},
	}
	opts := WriteOptions{Comments: map[string]map[string]string{
		"libfoo.so.1": {"getpid": "1532 calls", "mkdir": "not in the compartment: not written"},
		"libbar.so":   {"getpid": "2 calls"},
	}}
	want := `version = 1
default = "errno(1)"
bad-arch = "kill-process"
arches = ["x86_64", "x32"]

[[rule]]
action = "errno(38)"
syscalls = ["clone3"]

[[rule]]
action = "allow"
syscalls = [
  "close",
  "read",
  "write",
]

[[rule]]
action = "allow"
syscalls = ["clone"]
args = ["arg0 & 0x7e020000 == 0x0"]

[[rule]]
action = "allow"
syscalls = ["socket"]
args = ["arg0 != 0x26", "arg0 != 0x28"]

[[compartment]]
name = "libbar.so"
syscalls = [
  "getpid", # 2 calls
]

[[compartment]]
name = "libfoo.so.1"
path = "/opt/\"odd\" dir/libfoo.so.1"
build-id = "3f2a"
syscalls = [
  "getpid", # 1532 calls
  "write",
]

[[compartment]]
name = "main"
syscalls = []
`
	var b bytes.Buffer
	if err := p.WriteTOMLWithOptions(&b, opts); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("WriteTOMLWithOptions:\n%s\nwant\n%s", b.String(), want)
	}
	again, err := Parse("written.toml", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d := verdictDiff(p, again); d != "" {
		t.Errorf("decides differently after WriteTOML: %s", d)
	}
	if got := again.Compartments[1].Path; got != p.Compartments[1].Path {
		t.Errorf("path read back as %q, want %q", got, p.Compartments[1].Path)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTOMLErrors(t *testing.T) {
	valid := func() *Policy {
		return &Policy{Source: "p.toml", Compartments: []Compartment{{Name: "libfoo.so", Syscalls: []string{"read"}}}}
	}
	tests := []struct {
		name   string
		change func(*Policy, *WriteOptions)
		w      io.Writer
		want   string
	}{
		{"invalid policy", func(p *Policy, _ *WriteOptions) {
			p.Rules = []Rule{{Syscalls: []string{"mkdri"}, Pos: Pos{"p.toml", 3}}}
		},
			nil, `write policy: p.toml:3: unknown syscall "mkdri"`},
		{"path not UTF-8", func(p *Policy, _ *WriteOptions) { p.Compartments[0].Path = "/lib/\xff.so" },
			nil, `write policy p.toml: "/lib/\xff.so" is not UTF-8, which TOML requires`},
		{"comment with newline", func(_ *Policy, o *WriteOptions) {
			o.Comments = map[string]map[string]string{"libfoo.so": {"read": "two\nlines"}}
		}, nil, `write policy p.toml: comment on "read" has control character '\n'`},
		{"writer fails", func(*Policy, *WriteOptions) {}, failingWriter{},
			"write policy p.toml: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, opts := valid(), WriteOptions{}
			tt.change(p, &opts)
			w := tt.w
			if w == nil {
				w = &bytes.Buffer{}
			}
			err := p.WriteTOMLWithOptions(w, opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("WriteTOMLWithOptions = %v, want %s", err, tt.want)
			}
		})
	}
}
