package check

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func TestOverlaps(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sec := func(key, client string, from, to int) Section {
		return Section{Key: key, Client: client, Start: at(from), End: at(to)}
	}
	tests := []struct {
		name     string
		sections []Section
		want     []string // "earlier>later" client pairs
	}{
		{"empty", nil, nil},
		{"disjoint", []Section{sec("k", "a", 0, 10), sec("k", "b", 20, 30)}, nil},
		{"touching is not overlapping", []Section{sec("k", "a", 0, 10), sec("k", "b", 10, 20)}, nil},
		{"overlap", []Section{sec("k", "a", 0, 10), sec("k", "b", 9, 20)}, []string{"a>b"}},
		{"unsorted input", []Section{sec("k", "b", 9, 20), sec("k", "a", 0, 10)}, []string{"a>b"}},
		{"nested", []Section{sec("k", "a", 0, 100), sec("k", "b", 10, 20), sec("k", "c", 30, 40)},
			[]string{"a>b", "a>c"}},
		{"other keys do not conflict", []Section{sec("k1", "a", 0, 10), sec("k2", "b", 5, 15)}, nil},
		{"overlap per key", []Section{sec("k1", "a", 0, 10), sec("k2", "b", 5, 15), sec("k2", "c", 14, 16)},
			[]string{"b>c"}},
		{"empty section never overlaps", []Section{sec("k", "a", 0, 10), sec("k", "b", 5, 5), sec("k", "c", 7, 3)}, nil},
		{"same start", []Section{sec("k", "a", 0, 10), sec("k", "b", 0, 10)}, []string{"a>b"}},
		{"chain reaches past a short one", []Section{sec("k", "a", 0, 50), sec("k", "b", 10, 20), sec("k", "c", 49, 60)},
			[]string{"a>b", "a>c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range Overlaps(tt.sections) {
				got = append(got, o.Earlier.Client+">"+o.Later.Client)
				if o.Duration() <= 0 {
					t.Errorf("overlap %v has non-positive duration", o)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("overlaps = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHoldEndsAtDeadline(t *testing.T) {
	r := NewRecorder()
	start := time.Now()
	h := r.Begin("a", "k", start, start, 10*time.Millisecond)
	h.EndAt(start.Add(time.Hour))
	h.EndAt(start.Add(2 * time.Hour)) // a second End records nothing
	s := r.Sections()
	if len(s) != 1 {
		t.Fatalf("sections = %d, want 1", len(s))
	}
	if got := s[0].End.Sub(start); got != 10*time.Millisecond {
		t.Errorf("section ends %v after start, want the 10ms validity", got)
	}
}

func TestIncrementSkippedAfterDeadline(t *testing.T) {
	r := NewRecorder()
	past := time.Now().Add(-time.Second)
	h := r.Begin("a", "k", past, past, time.Millisecond)
	if h.Increment(0) {
		t.Error("Increment wrote under an expired lock")
	}
	if res := r.Check(); res.LostUpdates != 0 || res.Late != 0 {
		t.Errorf("result %v, want no updates at all", res)
	}
}

// run has clients take turns on one key through lock/unlock, recording
// each section and incrementing the shared counter inside it.
func run(r *Recorder, clients, rounds int, lock, unlock func()) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				t0 := time.Now()
				lock()
				got := time.Now()
				r.Attempt(t0, got, true, "")
				h := r.Begin(fmt.Sprintf("c%d", c), "k", t0, got, time.Hour)
				h.Increment(20 * time.Microsecond)
				h.End()
				unlock()
			}
		}()
	}
	wg.Wait()
}

func TestMutexHistoryPasses(t *testing.T) {
	r := NewRecorder()
	var mu sync.Mutex
	run(r, 8, 200, mu.Lock, mu.Unlock)
	res := r.Check()
	if !res.OK() || res.Sections != 1600 || res.Acquired != 1600 {
		t.Fatalf("a real mutex failed the checker: %v\n%v", res, res.Overlaps)
	}
}

// TestNoLockHistoryFails is the negative control: clients that do not
// exclude each other must be caught, by the sweep and by the counter.
func TestNoLockHistoryFails(t *testing.T) {
	r := NewRecorder()
	run(r, 8, 200, func() {}, func() {})
	res := r.Check()
	if len(res.Overlaps) == 0 {
		t.Errorf("no overlap found among clients that never locked: %v", res)
	}
	if res.LostUpdates == 0 {
		t.Errorf("no lost update found among clients that never locked: %v", res)
	}
	if res.OK() {
		t.Error("OK() = true for a history without mutual exclusion")
	}
}

func TestResultFigures(t *testing.T) {
	r := NewRecorder()
	t0 := time.Now()
	for i := 1; i <= 100; i++ {
		r.Attempt(t0, t0.Add(time.Duration(i)*time.Millisecond), i%2 == 0, map[bool]string{true: "", false: "contended"}[i%2 == 0])
	}
	res := r.Check()
	if res.Attempts != 100 || res.Acquired != 50 || res.Errors["contended"] != 50 {
		t.Errorf("counts wrong: %v", res)
	}
	if res.P50 != 50*time.Millisecond || res.P99 != 99*time.Millisecond {
		t.Errorf("p50=%v p99=%v, want 50ms and 99ms", res.P50, res.P99)
	}
}

func TestRenewedMovesDeadline(t *testing.T) {
	r := NewRecorder()
	start := time.Now()
	h := r.Begin("a", "k", start, start, 10*time.Millisecond)
	h.Renewed(start.Add(5*time.Millisecond), 100*time.Millisecond)
	h.Renewed(start, time.Millisecond) // an earlier end never shortens the claim
	if got := h.Deadline().Sub(start); got != 105*time.Millisecond {
		t.Fatalf("deadline %v after start, want 105ms", got)
	}
	b := r.Begin("b", "k", start.Add(50*time.Millisecond), start.Add(50*time.Millisecond), time.Second)
	b.EndAt(start.Add(60 * time.Millisecond))
	h.EndAt(h.Deadline())
	if res := r.Check(); len(res.Overlaps) != 1 {
		t.Fatalf("a grant within a renewed claim: %d overlaps, want 1", len(res.Overlaps))
	}
}
