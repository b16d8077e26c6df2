package shim

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// same compares requests, an empty list and none alike.
func same(a, b Request) bool {
	return bytes.Equal(a.Program, b.Program) && a.Path == b.Path && slices.Equal(a.Args, b.Args) &&
		slices.Equal(a.Env, b.Env) && a.Listen == b.Listen
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{
		{},
		{Program: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Path: "/bin/true", Args: []string{"true"}, Listen: true},
		{Path: "/bin/echo", Args: []string{"echo", "caf\xe9", ""}, Env: []string{"A=1", "B="}},
	} {
		b, err := r.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", r, err)
		}
		got, err := DecodeRequest(b)
		if err != nil || !same(got, r) {
			t.Errorf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	if _, err := (Request{Args: []string{"a\x00b"}}).Encode(); err == nil || !strings.Contains(err.Error(), "argument 0 holds a NUL byte") {
		t.Errorf("an argument with a NUL: %v", err)
	}
	good, err := Request{Path: "/bin/true", Args: []string{"true"}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "cut short"},
		{"cut short", good[:len(good)-1], "cut short"},
		{"trailing", append(append([]byte{}, good...), 0), "1 bytes after its end"},
		{"huge length", []byte{0, 0xff, 0xff, 0xff, 0xff}, "cut short"},
	} {
		if _, err := DecodeRequest(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
