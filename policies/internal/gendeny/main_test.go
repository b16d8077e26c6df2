package main

import (
	"bytes"
	"os"
	"testing"
)

// TestUpToDate fails when deny-dangerous.toml is not what the generator
// writes from the current ranking: run go generate ./policies.
func TestUpToDate(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../deny-dangerous.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("deny-dangerous.toml is stale: run go generate ./policies")
	}
}
