package infer

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// factsVersion names the form of the analysis a cache holds: a change to
// the analysis that changes its facts gets a new one, so that old
// entries are never read.
const factsVersion = 6

// Cache keeps the analysis of objects by GNU build-id, in a directory:
// an object is read once, whatever path it is loaded from.
type Cache struct {
	Dir string
}

// DefaultCacheDir is where the analysis keeps its cache:
// $XDG_CACHE_HOME/syscell, or ~/.cache/syscell.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w", err)
	}
	return filepath.Join(dir, "syscell"), nil
}

func (c *Cache) file(buildID string) string {
	return filepath.Join(c.Dir, fmt.Sprintf("infer-v%d", factsVersion), buildID+".gob")
}

// get returns the cached analysis of the object with buildID, if any.
func (c *Cache) get(buildID string) (*Object, bool) {
	if c == nil || buildID == "" {
		return nil, false
	}
	f, err := os.Open(c.file(buildID))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var o Object
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&o); err != nil || o.BuildID != buildID {
		return nil, false
	}
	return &o, true
}

// put stores an analysis, atomically: a reader never sees half a file.
func (c *Cache) put(o *Object) error {
	if c == nil || o.BuildID == "" {
		return nil
	}
	path := c.file(o.BuildID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	w := bufio.NewWriter(tmp)
	err = errors.Join(gob.NewEncoder(w).Encode(o), w.Flush(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cache %s: %w", o.Path, err)
	}
	return nil
}
