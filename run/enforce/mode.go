package enforce

import "fmt"

// Mode says what happens to the calls a policy denies.
type Mode uint8

const (
	// Enforce gives denied calls the policy's action, in the kernel.
	Enforce Mode = iota
	// Audit lets every call run and reports those the policy denies.
	Audit
	// Complain fails denied calls with an errno instead of killing or
	// trapping, and reports them.
	Complain
)

var modeNames = [...]string{Enforce: "enforce", Audit: "audit", Complain: "complain"}

// String is the mode's name, as ParseMode reads it.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMode reads "enforce", "audit" or "complain".
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want enforce, audit or complain)", s)
}
