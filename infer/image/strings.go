package image

import (
	"debug/elf"
	"sort"
	"strings"
)

// readStrings collects, from every NUL-terminated string of the
// read-only data sections (.rodata and its kind), the longest tail made
// of the characters of C names: what a call of dlsym can look up. A
// linker that merges strings points at tails ("open" inside "cannot
// open"), so every suffix of a tail is a name a pointer may give.
func (img *Image) readStrings(ef *elf.File) {
	seen := map[string]bool{}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&(elf.SHF_WRITE|elf.SHF_EXECINSTR) != 0 {
			continue
		}
		if !strings.HasPrefix(s.Name, ".rodata") {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for _, str := range strings.Split(string(data), "\x00") {
			if tail := nameTail(str); tail != "" {
				seen[tail] = true
			}
		}
	}
	for s := range seen {
		img.Strings = append(img.Strings, s)
	}
	sort.Strings(img.Strings)
}

// nameTail is the longest tail of s made of letters, digits and '_'.
func nameTail(s string) string {
	i := len(s)
	for i > 0 && isNameByte(s[i-1]) {
		i--
	}
	return s[i:]
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
