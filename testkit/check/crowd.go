package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hold kinds of a Section, for Crowds: an exclusive section excludes every
// other section of its key; shared sections (read locks) exclude only
// exclusive ones; every section counts against the key's limit (a
// semaphore's permits).
const (
	Exclusive = ""
	Shared    = "shared"
)

// Crowd is the moment a section started while others of its key were
// held and it should not have been: it met an exclusive holder (or was
// exclusive and met any holder), or it made the holders more than the
// key's limit.
type Crowd struct {
	Section Section   // the section that started
	Others  []Section // the sections of its key held at that moment
	Limit   int       // the key's limit (0: none)
}

func (c Crowd) String() string {
	clients := make([]string, len(c.Others))
	for i, o := range c.Others {
		clients[i] = o.Client + "(" + cmp.Or(o.Kind, "exclusive") + ")"
	}
	return fmt.Sprintf("key %q: %s (%s) started at %s while %d held it (limit %d): %s",
		c.Section.Key, c.Section.Client, cmp.Or(c.Section.Kind, "exclusive"),
		c.Section.Start.Format(time.StampMicro), len(c.Others), c.Limit, strings.Join(clients, ", "))
}

// Crowds sweeps the sections of each key in time order, counting the
// holders at every start, and reports each section that started in
// violation of its key's bound. A key with a limit (limit(key) > 0, a
// semaphore's permits) may have that many holders at once, whatever their
// kind; a key without one (limit nil, or 0) may have any number of shared
// holders, or one exclusive holder alone.
// Intervals are half-open, as in Overlaps; empty sections are skipped.
func Crowds(sections []Section, limit func(key string) int) []Crowd {
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(a, b Section) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Start.Compare(b.Start))
	})
	var out []Crowd
	var held []Section // sections of the current key that have started and not ended
	for _, s := range sorted {
		if !s.End.After(s.Start) {
			continue
		}
		held = slices.DeleteFunc(held, func(h Section) bool { return h.Key != s.Key || !h.End.After(s.Start) })
		max := 0
		if limit != nil {
			max = limit(s.Key)
		}
		if crowded(s, held, max) {
			out = append(out, Crowd{Section: s, Others: slices.Clone(held), Limit: max})
		}
		held = append(held, s)
	}
	return out
}

// crowded reports whether s may not start while held hold its key: a key
// with a limit counts its holders, whatever their kind; a key without one
// lets shared sections share and nothing else.
func crowded(s Section, held []Section, max int) bool {
	switch {
	case len(held) == 0:
		return false
	case max > 0:
		return len(held)+1 > max
	case s.Kind == Exclusive:
		return true
	}
	return slices.ContainsFunc(held, func(h Section) bool { return h.Kind == Exclusive })
}
