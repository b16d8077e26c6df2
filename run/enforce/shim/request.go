package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Request is what the supervisor sends the shim, ending it by closing its
// side of the socket.
type Request struct {
	Program []byte // bpf.Encode
	Path    string
	Args    []string
	Env     []string
	Listen  bool
}

// The request's encoding, which the shim's C binary (run/enforce/shim/src)
// reads too: Listen as one byte, then Program and Path as lengths
// (little-endian uint32) followed by their bytes, then Args and Env as
// counts followed by strings the same way. No string may hold a NUL
// byte, which would cut it short in execve(2).
var errNUL = errors.New("holds a NUL byte")

// Encode encodes r.
func (r Request) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte(boolByte(r.Listen))
	putBytes(&b, r.Program)
	if err := putString(&b, "the path", r.Path); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		what    string
		strings []string
	}{{"argument", r.Args}, {"environment variable", r.Env}} {
		binary.Write(&b, binary.LittleEndian, uint32(len(list.strings)))
		for i, s := range list.strings {
			if err := putString(&b, fmt.Sprintf("%s %d", list.what, i), s); err != nil {
				return nil, err
			}
		}
	}
	return b.Bytes(), nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func putBytes(b *bytes.Buffer, p []byte) {
	binary.Write(b, binary.LittleEndian, uint32(len(p)))
	b.Write(p)
}

func putString(b *bytes.Buffer, what, s string) error {
	if bytes.IndexByte([]byte(s), 0) >= 0 {
		return fmt.Errorf("shim: %s %w", what, errNUL)
	}
	putBytes(b, []byte(s))
	return nil
}

// DecodeRequest decodes what Encode made.
func DecodeRequest(data []byte) (Request, error) {
	d := decoder{data: data}
	var r Request
	r.Listen = d.byte() != 0
	r.Program = d.bytes()
	r.Path = string(d.bytes())
	r.Args = d.strings()
	r.Env = d.strings()
	if d.err == nil && len(d.data) != 0 {
		d.err = fmt.Errorf("%d bytes after its end", len(d.data))
	}
	if d.err != nil {
		return Request{}, fmt.Errorf("shim: decode request: %w", d.err)
	}
	return r, nil
}

// decoder reads a request, keeping the first error.
type decoder struct {
	data []byte
	err  error
}

func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.data)) < n {
		d.err = fmt.Errorf("cut short: %d bytes wanted, %d left", n, len(d.data))
		return nil
	}
	p := d.data[:n]
	d.data = d.data[n:]
	return p
}

func (d *decoder) byte() byte {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) bytes() []byte {
	return d.take(uint64(d.uint32()))
}

func (d *decoder) strings() []string {
	n := d.uint32()
	var out []string
	for i := uint32(0); i < n && d.err == nil; i++ {
		s := d.bytes()
		if bytes.IndexByte(s, 0) >= 0 {
			d.err = fmt.Errorf("string %d %w", i, errNUL)
		}
		out = append(out, string(s))
	}
	return out
}
