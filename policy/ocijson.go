package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ociProfile is Docker's seccomp profile format: the runtime-spec's
// LinuxSeccomp, plus archMap and syscalls entries that apply only to some
// hosts and containers (Syscalls hides LinuxSeccomp's). moby's own types are
// not used, to keep moby out of syscell's dependencies. The top level is
// decoded key by key, as fields lists them.
type ociProfile struct {
	specs.LinuxSeccomp
	ArchMap  []ociArchMap
	Syscalls []ociSyscall

	// keyLines and lines place the top-level keys and syscalls entries.
	keyLines map[string]int
	lines    []int
}

// ociArchMap lists the ABIs a profile covers on a host of architecture Arch.
type ociArchMap struct {
	Arch      specs.Arch   `json:"architecture"`
	SubArches []specs.Arch `json:"subArchitectures"`
}

// ociSyscall is one syscalls entry. Name is the form older profiles use for
// a single syscall.
type ociSyscall struct {
	specs.LinuxSyscall
	Name     string     `json:"name,omitempty"`
	Comment  string     `json:"comment,omitempty"`
	Includes *ociFilter `json:"includes,omitempty"`
	Excludes *ociFilter `json:"excludes,omitempty"`
}

// ociFilter is a condition on the host and container: an entry applies when
// all of its includes hold and none of its excludes.
type ociFilter struct {
	Caps      []string       `json:"caps,omitempty"`
	Arches    []string       `json:"arches,omitempty"`
	MinKernel *kernelVersion `json:"minKernel,omitempty"`
}

// fields maps the top-level keys other than syscalls to where they decode.
func (p *ociProfile) fields() map[string]any {
	return map[string]any{
		"defaultAction":    &p.DefaultAction,
		"defaultErrnoRet":  &p.DefaultErrnoRet,
		"architectures":    &p.Architectures,
		"archMap":          &p.ArchMap,
		"flags":            &p.Flags,
		"listenerPath":     &p.ListenerPath,
		"listenerMetadata": &p.ListenerMetadata,
	}
}

// jsonDecoder decodes a profile value by value, so that each error and each
// syscalls entry gets the line it was written on. Unknown keys are errors:
// a misspelt "excludes" would otherwise make a conditional rule apply to
// every container.
type jsonDecoder struct {
	name string
	data []byte
	dec  *json.Decoder
}

func decodeProfile(name string, data []byte) (*ociProfile, error) {
	d := &jsonDecoder{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.DisallowUnknownFields()
	// A first pass over the whole input finds syntax errors with offsets
	// from its start, so the walk below meets only well-formed JSON.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		var serr *json.SyntaxError
		if errors.As(err, &serr) {
			return nil, d.errorAt(int(serr.Offset), "JSON syntax: %v", err)
		}
		return nil, d.errorAt(0, "%v", err)
	}
	p := &ociProfile{keyLines: map[string]int{}}
	if err := d.delim('{'); err != nil {
		return nil, d.errorAt(0, "a seccomp profile is a JSON object")
	}
	for d.dec.More() {
		if err := d.member(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// member decodes one key and its value at the top level.
func (d *jsonDecoder) member(p *ociProfile) error {
	at := d.next()
	tok, err := d.dec.Token()
	key, ok := tok.(string)
	if err != nil || !ok {
		return d.errorAt(at, "want a key")
	}
	if first, dup := p.keyLines[key]; dup {
		return d.errorAt(at, "duplicate key %q (first at line %d)", key, first)
	}
	p.keyLines[key] = lineAt(d.data, at)
	if key == "syscalls" {
		return d.syscalls(p)
	}
	field, ok := p.fields()[key]
	if !ok {
		return d.errorAt(at, "unknown key %q", key)
	}
	return d.value(key, field)
}

// syscalls decodes the entries one by one, noting the line of each.
func (d *jsonDecoder) syscalls(p *ociProfile) error {
	at := d.next()
	if d.data[at] != '[' {
		return d.value("syscalls", &p.Syscalls)
	}
	if err := d.delim('['); err != nil {
		return err
	}
	for i := 0; d.dec.More(); i++ {
		p.lines = append(p.lines, lineAt(d.data, d.next()))
		var e ociSyscall
		if err := d.value(fmt.Sprintf("syscalls[%d]", i), &e); err != nil {
			return err
		}
		p.Syscalls = append(p.Syscalls, e)
	}
	return d.delim(']')
}

// delim reads the next token, which must be delimiter want. The syntax has
// been checked, so only an object or array where the other is due fails.
func (d *jsonDecoder) delim(want json.Delim) error {
	at := d.next()
	if tok, err := d.dec.Token(); err != nil || tok != want {
		return d.errorAt(at, "want %q", want)
	}
	return nil
}

// value decodes the next value into v, placing an error on the line where
// decoding stopped.
func (d *jsonDecoder) value(what string, v any) error {
	at := d.next()
	err := d.dec.Decode(v)
	var terr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &terr):
		// Decode counts offsets from the start of the value.
		return d.errorAt(at+int(terr.Offset), "%s: want %s, not %s", jsonPath(what, terr.Field), jsonKind(terr.Type), terr.Value)
	}
	return d.errorAt(at, "%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
}

// next is the offset of the next value or key: the decoder's offset stops
// before the separators and spaces that lead to it.
func (d *jsonDecoder) next() int {
	off := int(d.dec.InputOffset())
	for off < len(d.data) && strings.IndexByte(" \t\r\n,:", d.data[off]) >= 0 {
		off++
	}
	return off
}

func (d *jsonDecoder) errorAt(off int, format string, args ...any) error {
	return errorAt(Pos{File: d.name, Line: lineAt(d.data, off)}, format, args...)
}

// jsonPath extends what with the path of a type error's field, leaving out
// the names of embedded Go structs, which JSON does not see.
func jsonPath(what, field string) string {
	for _, part := range strings.Split(field, ".") {
		if part != "" && !unicode.IsUpper(rune(part[0])) {
			what += "." + part
		}
	}
	return what
}

// jsonKind describes the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an unsigned integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
