package bpf

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, s := range readArchive(t, "testdata/validate.txtar") {
		t.Run(s.name, func(t *testing.T) {
			want, ok := directive(s.text, "want")
			if !ok {
				t.Fatal("no want directive")
			}
			err := Validate(mustAssemble(t, s.text))
			switch want {
			case "ok":
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			case "empty":
				if !errors.Is(err, ErrEmpty) {
					t.Fatalf("Validate: %v, want ErrEmpty", err)
				}
				return
			}
			at, text, _ := strings.Cut(want, ": ")
			index, _ := strconv.Atoi(at)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate: %v, want a *ValidationError", err)
			}
			if verr.Index != index || !strings.Contains(verr.Error(), text) {
				t.Fatalf("Validate: %v (index %d), want index %d and %q", err, verr.Index, index, text)
			}
		})
	}
}

func TestValidateLength(t *testing.T) {
	for _, tc := range []struct {
		n       int
		tooLong bool
	}{
		{1, false},
		{MaxInstructions, false},
		{MaxInstructions + 1, true},
	} {
		prog := make([]Instruction, tc.n)
		for i := range prog {
			prog[i] = Ret(retAllow)
		}
		err := Validate(prog)
		if got := errors.Is(err, ErrTooLong); got != tc.tooLong {
			t.Errorf("%d instructions: Validate = %v, want too long: %v", tc.n, err, tc.tooLong)
		}
		if !tc.tooLong && err != nil {
			t.Errorf("%d instructions: Validate = %v", tc.n, err)
		}
	}
}

// TestValidateMatchesRun checks the promise that a valid program runs
// without error on any input.
func TestValidateMatchesRun(t *testing.T) {
	c := seeded(7)
	for range 2000 {
		prog, consts := randomProgram(c, 1+c.IntN(60))
		for range 10 {
			if _, err := Run(prog, randomInput(c, consts)); err != nil {
				t.Fatalf("valid program fails: %v\n%s", err, Disassemble(prog))
			}
		}
	}
}
