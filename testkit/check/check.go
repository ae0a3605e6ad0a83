package check

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Section is one critical section: Client believed it held Key from Start
// to End.
type Section struct {
	Key    string
	Client string
	Start  time.Time
	End    time.Time
	// Kind is Exclusive (the zero value) or Shared; Crowds reads it,
	// Overlaps treats every section as exclusive.
	Kind string
}

// Overlap is a pair of sections of one key whose intervals intersect.
// Earlier started no later than Later.
type Overlap struct {
	Earlier, Later Section
}

// Duration is how long both held the key at once.
func (o Overlap) Duration() time.Duration {
	return minTime(o.Earlier.End, o.Later.End).Sub(o.Later.Start)
}

func (o Overlap) String() string {
	return fmt.Sprintf("key %q: %s and %s held it together for %v",
		o.Earlier.Key, o.Earlier.Client, o.Later.Client, o.Duration())
}

// Overlaps sweeps the sections of each key in start order and reports every
// section that began before an earlier one of the same key had ended. Each
// violating section is reported once, paired with the earlier section that
// reaches furthest. Intervals are half-open: a section may start at the
// very instant the previous one ended. Sections with End before Start are
// treated as empty and never overlap.
func Overlaps(sections []Section) []Overlap {
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(a, b Section) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return a.Start.Compare(b.Start)
	})
	var out []Overlap
	var reach Section // the section of the current key that ends last
	for i, s := range sorted {
		if !s.End.After(s.Start) {
			continue
		}
		if i == 0 || reach.Key != s.Key || reach.End.IsZero() {
			reach = s
			continue
		}
		if s.Start.Before(reach.End) {
			out = append(out, Overlap{Earlier: reach, Later: s})
		}
		if s.End.After(reach.End) {
			reach = s
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
