package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// rwClient loops over keys until stop: each round takes a read lock or,
// every writeEvery-th round, a write lock, holds it for hold, records the
// section and unlocks. It counts its grants by kind.
type rwClient struct {
	name       string
	c          *redis.Client
	rec        *check.Recorder
	keys       int
	writeEvery int
	hold       time.Duration
	reads      *atomic.Int64
	writes     *atomic.Int64
}

func (w rwClient) run(stop time.Time, seed int) error {
	ctx := context.Background()
	for n := seed; time.Now().Before(stop); n++ {
		key := fmt.Sprintf("rw:stress:%d", n%w.keys)
		kind, args := check.Shared, []any{"LOCK", key, 2000, "SHARED"}
		if n%w.writeEvery == 0 {
			kind, args = check.Exclusive, []any{"LOCK", key, 2000}
		}
		t0 := time.Now()
		res, err := w.c.Do(ctx, args...).Slice()
		got := time.Now()
		if err == redis.Nil {
			continue
		}
		if err != nil || len(res) != 2 {
			return fmt.Errorf("%v = %v %v", args, res, err)
		}
		tok, _ := res[0].(string)
		ms, _ := res[1].(int64)
		h := w.rec.BeginKind(w.name, key, kind, t0, got, time.Duration(ms)*time.Millisecond)
		time.Sleep(w.hold) // the work done under the lock
		h.End()
		if err := w.c.Do(ctx, "UNLOCK", key, tok).Err(); err != nil {
			return fmt.Errorf("UNLOCK: %v", err)
		}
		if kind == check.Shared {
			w.reads.Add(1)
		} else {
			w.writes.Add(1)
		}
	}
	return nil
}

// Readers and writers over two proxies and a few keys: the history has no
// crowd (no writer beside any holder), readers did share, and the checker
// does report a writer put among readers on purpose.
func TestSharedStressNoCrowds(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{})
	rec := check.NewRecorder()
	var reads, writes atomic.Int64
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		via := []*redlocktest.Instance{a, b}[i%2]
		w := rwClient{name: fmt.Sprintf("c%d", i), c: via.Client(t, 2), rec: rec, keys: 3,
			writeEvery: 4, hold: 3 * time.Millisecond, reads: &reads, writes: &writes}
		wg.Go(func() { errs <- w.run(stop, i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sections := rec.Sections()
	if crowds := check.Crowds(sections, nil); len(crowds) > 0 {
		t.Fatalf("%d crowds, first: %v", len(crowds), crowds[0])
	}
	shared := sharedOverlaps(sections)
	t.Logf("%d reads, %d writes, %d sections, %d overlapping reader pairs", reads.Load(), writes.Load(), len(sections), shared)
	if reads.Load() == 0 || writes.Load() == 0 || shared == 0 {
		t.Fatalf("the run did not exercise both kinds and shared holds: %d reads, %d writes, %d overlapping readers", reads.Load(), writes.Load(), shared)
	}
	// The negative control: a writer over a reader's section is a crowd.
	for _, s := range sections {
		if s.Kind == check.Shared {
			intruder := check.Section{Key: s.Key, Client: "intruder", Kind: check.Exclusive, Start: s.Start.Add(s.End.Sub(s.Start) / 2), End: s.End.Add(time.Millisecond)}
			if crowds := check.Crowds(append(sections, intruder), nil); len(crowds) == 0 {
				t.Fatal("Crowds misses a writer among readers")
			}
			break
		}
	}
}

// sharedOverlaps counts pairs of readers' sections of one key that
// overlap: proof that readers held at once.
func sharedOverlaps(sections []check.Section) int {
	var readers []check.Section
	for _, s := range sections {
		if s.Kind == check.Shared {
			readers = append(readers, s)
		}
	}
	return len(check.Overlaps(readers))
}

// A writer that waits is not starved by a stream of overlapping readers
// that would otherwise keep the key held forever: its wait keeps new
// readers out, the holding ones drain, and it gets the lock within its
// WAIT. No reader holds while it does.
func TestSharedWriterNotStarved(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{})
	const key = "rw:starve"
	rec := check.NewRecorder()
	var stopped atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for i := range 4 {
		c := []*redlocktest.Instance{a, b}[i%2].Client(t, 2)
		wg.Go(func() {
			time.Sleep(time.Duration(i) * readerHold / 4) // staggered, so that their holds overlap
			readerStream(c, rec, fmt.Sprintf("r%d", i), key, &stopped, &reads)
		})
	}
	t.Cleanup(func() { stopped.Store(true); wg.Wait() })
	pollFor(t, "the readers' stream", func() bool { return reads.Load() >= 8 })
	w := waitClient(t, b)
	t0 := time.Now()
	res, err := w.Do(ctxT(t), "LOCK", key, 5000, "WAIT", 8000).Slice()
	got := time.Now()
	if err != nil || len(res) != 2 {
		t.Fatalf("writer's LOCK WAIT among a stream of readers = %v %v; want the lock", res, err)
	}
	ms, _ := res[1].(int64)
	h := rec.BeginKind("writer", key, check.Exclusive, t0, got, time.Duration(ms)*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the writer's work, with readers knocking
	h.End()
	if err := w.Do(ctxT(t), "UNLOCK", key, res[0]).Err(); err != nil {
		t.Fatal(err)
	}
	before := reads.Load()
	pollFor(t, "readers again after the writer", func() bool { return reads.Load() > before })
	stopped.Store(true)
	wg.Wait()
	if crowds := check.Crowds(rec.Sections(), nil); len(crowds) > 0 {
		t.Fatalf("%d crowds, first: %v", len(crowds), crowds[0])
	}
}

// readerHold is how long each reader of a stream holds.
const readerHold = 160 * time.Millisecond

// readerStream takes read locks on key back to back, each held readerHold,
// until stopped: with several streams the key is never free of readers.
func readerStream(c *redis.Client, rec *check.Recorder, name, key string, stopped *atomic.Bool, reads *atomic.Int64) {
	ctx := context.Background()
	for !stopped.Load() {
		t0 := time.Now()
		tok, v, ok, err := lockSharedReply(ctx, c, key, 2000)
		got := time.Now()
		if err != nil || !ok {
			time.Sleep(5 * time.Millisecond) // refused: knock again soon
			continue
		}
		h := rec.BeginKind(name, key, check.Shared, t0, got, time.Duration(v)*time.Millisecond)
		time.Sleep(readerHold) // the reader's work
		h.End()
		reads.Add(1)
		_ = c.Do(ctx, "UNLOCK", key, tok).Err()
	}
}
