package policy

import (
	"bytes"
	"fmt"
	"os"
)

// Load reads a policy file in either format: an OCI seccomp profile when the
// file holds a JSON object (see ParseOCI, which opt is for), else syscell's
// TOML (see Parse). The warnings are those of an OCI import; a TOML policy
// has none. The file's path stands for it in positions.
func Load(path string, opt OCIOptions) (*Policy, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load policy: %w", err)
	}
	return ParseAny(path, data, opt)
}

// ParseAny reads data as Load reads a file: an OCI profile or syscell's
// TOML; name stands for the file in positions.
func ParseAny(name string, data []byte, opt OCIOptions) (*Policy, []string, error) {
	if isJSONObject(data) {
		return ParseOCI(name, data, opt)
	}
	p, err := Parse(name, data)
	return p, nil, err
}

// isJSONObject tells the formats apart by their first character: a TOML
// document cannot start with "{".
func isJSONObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}
