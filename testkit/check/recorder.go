package check

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder collects a run's history from many client goroutines at once.
// The zero value is not usable; use NewRecorder.
type Recorder struct {
	mu        sync.Mutex
	sections  []Section
	latencies []time.Duration // of every acquire attempt, granted or not
	attempts  int
	acquired  int
	errs      map[string]int // acquire errors by class, for the report
	counters  map[string]*counter
}

// counter is the shared state a critical section updates. Load and Store
// are separate atomic steps on purpose: the increment is a read-modify-write
// that only mutual exclusion makes safe, and the atomics keep the race
// detector out of a race that the test wants to measure, not prevent.
type counter struct {
	v       atomic.Int64
	applied atomic.Int64 // increments that completed within their section
	late    atomic.Int64 // increments whose write landed after validity ended
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{errs: map[string]int{}, counters: map[string]*counter{}}
}

// Attempt records one acquire attempt that began at start and ended (with
// or without the lock) at end. class names a failure ("" when granted).
func (r *Recorder) Attempt(start, end time.Time, granted bool, class string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	r.latencies = append(r.latencies, end.Sub(start))
	if granted {
		r.acquired++
	} else if class != "" {
		r.errs[class]++
	}
}

// Hold is a critical section in progress.
type Hold struct {
	r        *Recorder
	key      string
	client   string
	kind     string
	start    time.Time
	deadline time.Time
	ended    bool
}

// Begin opens a critical section for client on key. acquireStart is when
// the acquire call began, acquired when it returned, validity what it
// returned. The section may last until acquireStart+validity at the
// latest: that bound is earlier than the lock's true expiry, so a section
// cut there is one the lock service must protect.
func (r *Recorder) Begin(client, key string, acquireStart, acquired time.Time, validity time.Duration) *Hold {
	return &Hold{r: r, key: key, client: client, start: acquired, deadline: acquireStart.Add(validity)}
}

// BeginKind is Begin for a section of kind (Exclusive or Shared, as
// Crowds reads it).
func (r *Recorder) BeginKind(client, key, kind string, acquireStart, acquired time.Time, validity time.Duration) *Hold {
	h := r.Begin(client, key, acquireStart, acquired, validity)
	h.kind = kind
	return h
}

// Renewed records a successful extend of the section's lock: renewStart is
// when the extend call began, validity what it returned. The claim then
// runs to renewStart+validity, or its earlier deadline if that is later.
// After a failed extend nothing changes: the claim still runs to the
// validity last reported.
func (h *Hold) Renewed(renewStart time.Time, validity time.Duration) {
	if d := renewStart.Add(validity); d.After(h.deadline) {
		h.deadline = d
	}
}

// Deadline is when the section's claim to the lock runs out.
func (h *Hold) Deadline() time.Time { return h.deadline }

// Increment does the read-modify-write of key's shared counter, pausing
// for pause between the read and the write so that an overlapping holder
// has a chance to interleave. It skips the update when the deadline has
// already passed (a careful client does no work under an expired lock) and
// reports whether it wrote.
func (h *Hold) Increment(pause time.Duration) bool {
	c := h.r.counter(h.key)
	if !time.Now().Before(h.deadline) {
		return false
	}
	v := c.v.Load()
	if pause > 0 {
		spin(pause)
	}
	c.v.Store(v + 1)
	if time.Now().Before(h.deadline) {
		c.applied.Add(1)
	} else {
		c.late.Add(1)
	}
	return true
}

// spin waits without yielding the time to a timer, which under load can
// oversleep by far more than the pause itself.
func spin(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// End closes the section at the earlier of now and its deadline. Call it
// just before the release: from then on the client no longer relies on
// the lock. Calling it twice records one section.
func (h *Hold) End() {
	h.EndAt(time.Now())
}

// EndAt closes the section at the earlier of t and its deadline.
func (h *Hold) EndAt(t time.Time) {
	if h.ended {
		return
	}
	h.ended = true
	if h.deadline.Before(t) {
		t = h.deadline
	}
	h.r.mu.Lock()
	h.r.sections = append(h.r.sections, Section{Key: h.key, Client: h.client, Start: h.start, End: t, Kind: h.kind})
	h.r.mu.Unlock()
}

func (r *Recorder) counter(key string) *counter {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counters[key]
	if !ok {
		c = &counter{}
		r.counters[key] = c
	}
	return c
}

// Sections returns a copy of the recorded sections.
func (r *Recorder) Sections() []Section {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sections)
}

// Result is the verdict over a history.
type Result struct {
	Attempts, Acquired int
	Sections           int
	Overlaps           []Overlap
	// LostUpdates counts increments missing from the counters. Increments
	// written after their section's deadline (Late) are excluded from the
	// expected total but may still have clobbered another's update, so
	// LostUpdates is only evidence of a violation when Late is 0.
	LostUpdates int64
	Late        int64
	Errors      map[string]int
	P50, P99    time.Duration
}

// OK reports whether the history kept mutual exclusion.
func (res Result) OK() bool { return len(res.Overlaps) == 0 && res.LostUpdates == 0 }

// Check runs the checker over everything recorded so far. Call it after
// every client has stopped.
func (r *Recorder) Check() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{
		Attempts: r.attempts, Acquired: r.acquired, Sections: len(r.sections),
		Overlaps: Overlaps(r.sections), Errors: maps(r.errs),
	}
	for _, c := range r.counters {
		expected := c.applied.Load() + c.late.Load()
		res.LostUpdates += max(expected-c.v.Load(), 0)
		res.Late += c.late.Load()
	}
	res.P50, res.P99 = percentile(r.latencies, 0.50), percentile(r.latencies, 0.99)
	return res
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// String is the one-line summary printed per scenario.
func (res Result) String() string {
	return fmt.Sprintf("attempts=%d acquired=%d sections=%d overlaps=%d lost_updates=%d late=%d p50=%v p99=%v errors=%v",
		res.Attempts, res.Acquired, res.Sections, len(res.Overlaps), res.LostUpdates, res.Late,
		res.P50.Round(10*time.Microsecond), res.P99.Round(10*time.Microsecond), res.Errors)
}
