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
