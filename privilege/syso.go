package privilege

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// parseSyso reads syso's counts: a JSON object mapping each object syso saw
// making syscalls (a path, or a name such as "[heap]") to an object
// mapping x86_64 syscall numbers, in decimal, to how often they were made:
//
//	{"/usr/lib/x86_64-linux-gnu/libc.so.6": {"0": 12, "257": 3}}
//
// Counts are checked but not scored: the metric asks which calls a
// compartment makes, not how often. Every key is a compartment, "FAILED"
// (the calls syso could not attribute) included: that is how syso scored
// addrfilter's evaluation, whose published figures this reproduces, and it
// keeps every recorded call in the union. (addrfilter's enforcement
// instead adds FAILED's calls to every compartment.) syscell's recorder
// adds "[start-up]", the dynamic loader's calls starting the program,
// which come before any compartment's filter: they count in the union
// only.
func parseSyso(name string, data []byte) (*Allowlists, error) {
	r := &sysoReader{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	r.dec.UseNumber()
	a := &Allowlists{Source: name, Format: Syso}
	err := r.object("syso's counts", func(key string) error {
		c, err := r.compartment(key)
		if key == sysoStartUp {
			a.Outside = c.Syscalls
			return err
		}
		a.Compartments = append(a.Compartments, c)
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err == nil && len(a.Compartments) == 0 {
		err = errorAt(name, 1, "no compartments: the counts name no library")
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// sysoStartUp is the key of the loader's start-up calls (record.StartUpName).
const sysoStartUp = "[start-up]"

// sysoReader walks a JSON document token by token, which is what tells it
// the line each key was written on.
type sysoReader struct {
	name string
	data []byte
	dec  *json.Decoder
}

// compartment reads the counts of the library named key.
func (r *sysoReader) compartment(key string) (Compartment, error) {
	c := Compartment{Name: key}
	err := r.object("the counts of "+strconv.Quote(key), func(nr string) error {
		n, err := strconv.ParseInt(nr, 10, 64)
		if err != nil {
			return r.errorf("%q: syscall number %q is not a decimal number", key, nr)
		}
		name, err := x86_64Name(n)
		if err != nil {
			return r.errorf("%q: %v", key, err)
		}
		c.Syscalls = append(c.Syscalls, name)
		return r.count(key, nr)
	})
	return newCompartment(c), err
}

// count reads the count of syscall nr, which must be a whole number.
func (r *sysoReader) count(key, nr string) error {
	tok, err := r.token()
	if err != nil {
		return err
	}
	if n, ok := tok.(json.Number); ok {
		if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
			return nil
		}
	}
	return r.errorf("%q: the count of syscall %s must be a whole number, not %s", key, nr, describe(tok))
}

// object reads a JSON object, which what names in errors, and calls f with
// each key for it to read the value. A key given twice is an error, since
// JSON readers disagree on which value wins.
func (r *sysoReader) object(what string, f func(key string) error) error {
	tok, err := r.token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return r.errorf("%s must be a JSON object, not %s", what, describe(tok))
	}
	first := map[string]int{}
	for r.dec.More() {
		tok, err := r.token()
		if err != nil {
			return err
		}
		key := tok.(string) // the decoder accepts nothing else as a key
		if line, dup := first[key]; dup {
			return r.errorf("%s: %q given twice (first at line %d)", what, key, line)
		}
		first[key] = r.line()
		if err := f(key); err != nil {
			return err
		}
	}
	_, err = r.token() // the closing brace, since More said there is no key
	return err
}

// end checks that nothing follows the document's object.
func (r *sysoReader) end() error {
	if _, err := r.dec.Token(); err != io.EOF {
		return r.errorf("data after the JSON object")
	}
	return nil
}

// token reads the next token. An error is placed where the decoder
// stopped; an end of input here is always premature, since only end looks
// past the document's object.
func (r *sysoReader) token() (json.Token, error) {
	tok, err := r.dec.Token()
	if err == nil {
		return tok, nil
	}
	// An input that ends early is blamed on its last line with text.
	off := len(bytes.TrimRight(r.data, " \t\r\n"))
	var serr *json.SyntaxError
	if errors.As(err, &serr) {
		off = int(serr.Offset)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, errorAt(r.name, lineAt(r.data, off), "JSON syntax: %v", err)
}

// line is the line of the token just read.
func (r *sysoReader) line() int { return lineAt(r.data, int(r.dec.InputOffset())) }

func (r *sysoReader) errorf(format string, args ...any) error {
	return errorAt(r.name, r.line(), format, args...)
}

// describe names the kind of a JSON token for error messages.
func describe(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "the number " + string(tok)
	case bool:
		return "a boolean"
	}
	return "null"
}
