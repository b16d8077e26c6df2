package policy

import "bytes"

// notText says what binary data is, for the error of a command given it
// where it wants a policy: a policy is text, and never holds a zero byte.
// It returns "" for text.
func notText(data []byte) string {
	switch {
	case bytes.IndexByte(data, 0) < 0:
		return ""
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		return "an ELF object, not a policy (syscell record -o POLICY -- PROGRAM writes one)"
	case len(data)%8 == 0:
		return "binary, a compiled seccomp program perhaps, not a policy: give the policy it was compiled from"
	}
	return "binary, not a policy"
}
