package quorum

import (
	"testing"
	"time"
	"unsafe"
)

// TestQueuedReleaseKeepsItsOwnStrings: a release queued for a retry,
// which may wait as long as the lock can live, holds copies of its key
// and token, not the caller's strings (which may share their memory with
// many others').
func TestQueuedReleaseKeepsItsOwnStrings(t *testing.T) {
	cfg := testConfig()
	cfg.ReleaseRetry = time.Hour // queued, not retried during the test
	c := newCluster(t, []Node{&raiseNode{}}, cfg)
	shared := "key:1token:1"
	key, token := shared[:5], shared[5:]
	c.pending.add(0, 0, key, token, time.Minute, false)
	q := c.pending.queues[0]
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) != 1 {
		t.Fatalf("%d entries queued, want 1", len(q.entries))
	}
	e := q.entries[0]
	if e.key != key || e.token != token {
		t.Fatalf("queued %q %q, want %q %q", e.key, e.token, key, token)
	}
	if unsafe.StringData(e.key) == unsafe.StringData(key) || unsafe.StringData(e.token) == unsafe.StringData(token) {
		t.Fatal("the queued release shares its caller's strings")
	}
}

// TestQueuedUndoKeepsItsOwnStrings: an owner round's undo and a script
// round's undo, queued for as long as their locks can live, keep copies
// of their own of every string they were given.
func TestQueuedUndoKeepsItsOwnStrings(t *testing.T) {
	cfg := testConfig()
	cfg.ReleaseRetry = time.Hour // queued, not retried during the test
	c := newCluster(t, []Node{&raiseNode{}}, cfg)
	shared := "key:1mark:1keep:1key:2"
	key, mark, keep, key2 := shared[:5], shared[5:11], shared[11:17], shared[17:]
	c.pending.addUndo(0, 0, key, mark, keep, time.Minute)
	keys := []string{key, key2}
	c.pending.addUndoEval(0, keys, mark, 0, time.Minute)
	q := c.pending.queues[0]
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) != 2 || q.entries[0].undo == nil || q.entries[1].eval == nil {
		t.Fatalf("queued %+v, want an undo of a hold and of a script", q.entries)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if u := q.entries[0].undo; u.keep != keep || same(u.keep, keep) {
		t.Errorf("the hold's undo keeps %q, sharing its caller's %v", u.keep, same(u.keep, keep))
	}
	ev := q.entries[1].eval
	for j, k := range keys {
		if ev.keys[j] != k || same(ev.keys[j], k) {
			t.Errorf("the script's undo keeps key %q, sharing its caller's %v", ev.keys[j], same(ev.keys[j], k))
		}
	}
	if &ev.keys[0] == &keys[0] {
		t.Error("the script's undo shares its caller's slice of keys")
	}
}
