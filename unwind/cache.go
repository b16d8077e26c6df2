package unwind

import "sync"

// Cache keeps the Table of each object, loaded once, under a key that
// identifies the object (a file's device, inode and build-id, say). A
// failure to load is cached too: an object without CFI is not read again
// for every frame. It is safe for concurrent use.
type Cache[K comparable] struct {
	mu      sync.Mutex
	entries map[K]*cacheEntry
}

type cacheEntry struct {
	once  sync.Once
	table *Table
	err   error
}

// Get returns the table of the object key names, loading it with load the
// first time.
func (c *Cache[K]) Get(key K, load func() (*Table, error)) (*Table, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[K]*cacheEntry{}
	}
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.table, e.err = load() })
	return e.table, e.err
}

// Len returns the number of objects the cache holds.
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
