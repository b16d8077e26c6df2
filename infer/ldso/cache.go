package ldso

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Cache is the loader's cache of library paths by soname,
// /etc/ld.so.cache, as ldconfig writes it.
type Cache struct {
	byName map[string]string
}

// The new cache format (glibc 2.32 and later write only it): a header,
// entries, then strings whose offsets count from the start of the file.
const (
	cacheMagic  = "glibc-ld.so.cache1.1"
	headerSize  = 48
	entrySize   = 24
	flagLibc6   = 0x0003
	flagX8664   = 0x0300
	flagType    = 0x00ff
	flagArch    = 0xff00
	hwcapExtBit = 1 << 62
)

// ErrCacheFormat reports a cache file the loader would not read either.
var ErrCacheFormat = errors.New("not a glibc-ld.so.cache1.1 file")

// LoadCache reads the cache at path. A missing file is an empty cache,
// as for the loader.
func LoadCache(path string) (*Cache, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Cache{byName: map[string]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := ParseCache(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseCache reads a cache's bytes. Of the entries for one name it keeps
// the first for x86-64 that no glibc-hwcaps subdirectory qualifies:
// the one the loader falls back on on any processor.
func ParseCache(data []byte) (*Cache, error) {
	if i := bytes.Index(data, []byte(cacheMagic)); i > 0 {
		// An old-format cache may come first.
		data = data[i:]
	}
	if !bytes.HasPrefix(data, []byte(cacheMagic)) || len(data) < headerSize {
		return nil, ErrCacheFormat
	}
	n := int(binary.LittleEndian.Uint32(data[20:]))
	if n < 0 || headerSize+n*entrySize > len(data) {
		return nil, fmt.Errorf("%w: %d entries do not fit", ErrCacheFormat, n)
	}
	c := &Cache{byName: map[string]string{}}
	for i := range n {
		e := data[headerSize+i*entrySize:]
		flags := binary.LittleEndian.Uint32(e)
		key, value := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
		hwcap := binary.LittleEndian.Uint64(e[16:])
		if flags&flagType != flagLibc6 || flags&flagArch != flagX8664 || hwcap&hwcapExtBit != 0 {
			continue
		}
		name, ok1 := cString(data, key)
		path, ok2 := cString(data, value)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: entry %d points outside the file", ErrCacheFormat, i)
		}
		if _, dup := c.byName[name]; !dup {
			c.byName[name] = path
		}
	}
	return c, nil
}

func cString(data []byte, off uint32) (string, bool) {
	if int(off) >= len(data) {
		return "", false
	}
	end := bytes.IndexByte(data[off:], 0)
	if end < 0 {
		return "", false
	}
	return string(data[off : int(off)+end]), true
}

// Lookup returns the path the cache gives for a soname.
func (c *Cache) Lookup(name string) (string, bool) {
	p, ok := c.byName[name]
	return p, ok
}
