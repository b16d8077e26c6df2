package privilege

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Format is the kind of file compartments were read from.
type Format uint8

// The formats Load reads.
const (
	Syscell    Format = iota // syscell's TOML policy
	OCI                      // an OCI (Docker) seccomp profile
	Addrfilter               // addrfilter's TOML whitelist
	Syso                     // syso's JSON syscall counts
)

var formatNames = [...]string{Syscell: "syscell", OCI: "oci", Addrfilter: "addrfilter", Syso: "syso"}

// String names the format as reports write it.
func (f Format) String() string { return formatNames[f] }

// Load reads the file at path in any of the formats, told apart by
// content. The warnings are those of an OCI import, which opt is for (see
// policy.ParseOCI).
func Load(path string, opt policy.OCIOptions) (*Allowlists, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load allowlists: %w", err)
	}
	return Parse(path, data, opt)
}

// Parse reads data in any of the formats; name stands for the file in
// positions. Every problem with the input is a *policy.Error naming the
// line at fault.
func Parse(name string, data []byte, opt policy.OCIOptions) (*Allowlists, []string, error) {
	f := detect(data)
	switch f {
	case Syso:
		a, err := parseSyso(name, data)
		return a, nil, err
	case Addrfilter:
		a, err := parseAddrfilter(name, data)
		return a, nil, err
	}
	p, warnings, err := parsePolicy(name, data, f, opt)
	if err != nil {
		return nil, nil, err
	}
	return fromPolicy(p, f), warnings, nil
}

// parsePolicy reads a syscell policy or an OCI profile.
func parsePolicy(name string, data []byte, f Format, opt policy.OCIOptions) (*policy.Policy, []string, error) {
	if f == OCI {
		return policy.ParseOCI(name, data, opt)
	}
	p, err := policy.Parse(name, data)
	return p, nil, err
}

// detect tells the formats apart. A JSON object is syso's when its first
// value is an object (syso maps paths to objects of counts; no top-level
// value of an OCI profile is an object), else an OCI profile. A TOML
// document is addrfilter's when it opens with the [files] table, which a
// syscell policy cannot hold. Input that fits none goes to the syscell or
// OCI parser, which explain what is wrong with it.
func detect(data []byte) Format {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if firstValueIsObject(data) {
			return Syso
		}
		return OCI
	}
	if opensWithFiles(data) {
		return Addrfilter
	}
	return Syscell
}

// firstValueIsObject reports whether data, a JSON object, is empty or
// holds an object as its first value. An empty object counts as syso's,
// whose reader says that it records nothing.
func firstValueIsObject(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var toks [3]json.Token
	for i := range toks {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		toks[i] = tok
		if i == 1 && tok == json.Delim('}') {
			return true
		}
	}
	return toks[2] == json.Delim('{')
}

// opensWithFiles reports whether the first expression of a TOML document
// is the table header [files]; comments and blank lines come before it.
func opensWithFiles(data []byte) bool {
	var p unstable.Parser
	p.Reset(data)
	if !p.NextExpression() {
		return false
	}
	e := p.Expression()
	key, parts := tomlKey(e)
	return e.Kind == unstable.Table && parts == 1 && string(key.Data) == "files"
}

// tomlKey returns the first part of the key of a key-value or table
// header, and how many dotted parts the key has.
func tomlKey(n *unstable.Node) (first *unstable.Node, parts int) {
	for it := n.Key(); it.Next(); parts++ {
		if first == nil {
			first = it.Node()
		}
	}
	return first, parts
}

// x86_64Name names syscall number n of x86_64, the ABI of addrfilter's and
// syso's numbers. A number no syscall has is an error rather than a
// syscall of the lowest danger: it is a corrupt file, or a kernel newer
// than syscell's tables, and either way its score is unknown.
func x86_64Name(n int64) (string, error) {
	top := syscalls.Max(syscalls.X86_64)
	if n < 0 || n > int64(top) {
		return "", fmt.Errorf("syscall number %d out of range (x86_64 numbers go from 0 to %d)", n, top)
	}
	name, ok := syscalls.Name(syscalls.X86_64, uint32(n))
	if !ok {
		return "", fmt.Errorf("no x86_64 syscall has number %d", n)
	}
	return name, nil
}

// errorAt is a problem with the input, at a line of file.
func errorAt(file string, line int, format string, args ...any) error {
	return &policy.Error{Pos: policy.Pos{File: file, Line: line}, Msg: fmt.Sprintf(format, args...)}
}

// lineAt is the 1-based line of byte offset off in data; offsets past the
// end count as the last line.
func lineAt(data []byte, off int) int {
	off = max(0, min(off, len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}
