package attribute

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/syscell/syscell/unwind"
)

// Mapping is one executable mapping of an address space.
type Mapping struct {
	Start, End uint64
	// Offset is the offset in the object's file of the byte at Start.
	Offset uint64
	Object *Object
}

// Space is one address space: its executable mappings, sorted by address
// and disjoint. It implements unwind.Finder. It is not safe for concurrent
// use; Clone copies it.
type Space struct {
	objects *Objects
	maps    []Mapping
}

// NewSpace returns an empty address space whose objects' CFI objs reads.
func NewSpace(objs *Objects) *Space { return &Space{objects: objs} }

// Clone returns a copy that changes independently, as a forked child's
// address space does.
func (s *Space) Clone() *Space {
	return &Space{objects: s.objects, maps: slices.Clone(s.maps)}
}

// Mappings returns the mappings in address order.
func (s *Space) Mappings() []Mapping { return s.maps }

// Map adds m, replacing whatever overlapped it, as mmap with MAP_FIXED
// does.
func (s *Space) Map(m Mapping) {
	s.Unmap(m.Start, m.End)
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].Start >= m.End })
	s.maps = slices.Insert(s.maps, i, m)
}

// Unmap removes [start, end), splitting mappings that straddle its ends.
func (s *Space) Unmap(start, end uint64) {
	var kept []Mapping
	for _, m := range s.maps {
		if m.End <= start || m.Start >= end {
			kept = append(kept, m)
			continue
		}
		if m.Start < start {
			low := m
			low.End = start
			kept = append(kept, low)
		}
		if m.End > end {
			high := m
			high.Offset += end - m.Start
			high.Start = end
			kept = append(kept, high)
		}
	}
	s.maps = kept
}

// Lookup returns the mapping that holds addr.
func (s *Space) Lookup(addr uint64) (*Mapping, bool) {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > addr })
	if i < len(s.maps) && s.maps[i].Start <= addr {
		return &s.maps[i], true
	}
	return nil, false
}

// ErrUnmapped reports an address in no executable mapping.
var ErrUnmapped = errors.New("address in no executable mapping")

// Table implements unwind.Finder.
func (s *Space) Table(pc uint64) (*unwind.Table, uint64, error) {
	m, ok := s.Lookup(pc)
	if !ok {
		return nil, 0, fmt.Errorf("%#x: %w", pc, ErrUnmapped)
	}
	link, err := m.linkAddr(pc)
	if err != nil {
		return nil, 0, err
	}
	t, err := s.objects.Table(m.Object)
	if err != nil {
		return nil, 0, err
	}
	return t, pc - link, nil
}

// linkAddr returns the link-time address of the run-time address addr.
func (m *Mapping) linkAddr(addr uint64) (uint64, error) {
	link, ok := m.Object.linkAddr(addr - m.Start + m.Offset)
	if !ok {
		return 0, fmt.Errorf("%#x: file offset %#x of %s is in no loadable segment", addr, addr-m.Start+m.Offset, m.Object)
	}
	return link, nil
}
