package commands

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// keptTTL is the ttl of the KEEPALIVE locks below: renewed every 500 ms,
// with a node timeout of a second, so that a busy machine does not make a
// renewal fail.
const keptTTL = "1500"

// TestEveryReleaseStopsKeepalive: a KEEPALIVE lock released through any
// release form (UNLOCK, the native compare-and-deletes, each library's
// release script, node-redlock's over one key and over two) stops being
// renewed at once: it no longer counts as kept, and after its keeper would
// have renewed it several times over, no renewal has failed (no loss
// counted) and no backend holds the key again. A control lock kept by the
// same connection shows that time went by, and stays held.
func TestEveryReleaseStopsKeepalive(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{}, func(c *quorum.Config) { c.NodeTimeout = time.Second })
	f := client(t, h)
	cad := `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	releases := []struct {
		keys  []string
		call  func(tok string) []string
		reply string
	}{
		{k1("unlock"), func(tok string) []string { return []string{"UNLOCK", "unlock", tok} }, ":1"},
		{k1("delifeq"), func(tok string) []string { return []string{"DELIFEQ", "delifeq", tok} }, ":1"},
		{k1("delex"), func(tok string) []string { return []string{"DELEX", "delex", "IFEQ", tok} }, ":1"},
		{k1("cad"), func(tok string) []string { return []string{"EVAL", cad, "1", "cad", tok} }, ":1"},
		{k1("pottery"), func(tok string) []string { return []string{"EVALSHA", sha1Hex(potteryRelease), "1", "pottery", tok} }, ":1"},
		{k1("redispy"), func(tok string) []string { return []string{"EVALSHA", sha1Hex(redisPyRelease), "1", "redispy", tok} }, ":1"},
		{k1("redsync"), func(tok string) []string { return []string{"EVALSHA", sha1Hex(redsyncDelete), "1", "redsync", tok} }, ":1"},
		{k1("redlock1"), func(tok string) []string { return []string{"EVALSHA", sha1Hex(redlockReleaseV5), "1", "redlock1", tok} }, ":1"},
		{[]string{"redlock2a", "redlock2b"}, func(tok string) []string {
			return []string{"EVAL", redlockReleaseV40, "2", "redlock2a", "redlock2b", tok}
		}, ":2"},
	}
	keepLock(t, f, "ctl", "ctl-token")
	for _, r := range releases {
		tok := "tok-" + r.keys[0]
		for _, k := range r.keys {
			keepLock(t, f, k, tok)
		}
		before := h.KeepaliveStats().Held
		call := r.call(tok)
		if got := f.do(call...); got != r.reply {
			t.Fatalf("%s = %q, want %q", shortCall(call), got, r.reply)
		}
		if held := h.KeepaliveStats().Held; held != before-int64(len(r.keys)) {
			t.Errorf("%s: %d kept locks after it, want %d: its renewal goes on", shortCall(call), held, before-int64(len(r.keys)))
		}
	}
	renewals(t, servers[0], "ctl", 5)
	if st := h.KeepaliveStats(); st.Lost != 0 || st.Held != 1 {
		t.Errorf("KeepaliveStats = %+v, want 1 held (the control lock) and none lost", st)
	}
	for _, r := range releases {
		for _, k := range r.keys {
			for i, s := range servers {
				if n, err := s.Client().Exists(context.Background(), k).Result(); err != nil || n != 0 {
					t.Errorf("backend %d holds %s after its release: %d, %v", i, k, n, err)
				}
			}
		}
	}
}

// keepLock takes key with KEEPALIVE and token tok, or fails the test.
func keepLock(t *testing.T, f *fixture, key, tok string) {
	t.Helper()
	if got, _ := lockReply(t, f.do("LOCK", key, keptTTL, "KEEPALIVE", "TOKEN", tok)); got != tok {
		t.Fatalf("LOCK %s KEEPALIVE = %s", key, got)
	}
}

// renewals returns once key's ttl on srv has gone up n times: its keeper
// renewed it n times, every third of its ttl.
func renewals(t *testing.T, srv *redistest.Server, key string, n int) {
	t.Helper()
	rc := srv.Client()
	pttl := func() time.Duration {
		d, err := rc.PTTL(context.Background(), key).Result()
		if err != nil || d <= 0 {
			t.Fatalf("PTTL %s = %v, %v: the kept lock is gone", key, d, err)
		}
		return d
	}
	last := pttl()
	deadline := time.Now().Add(20 * time.Second)
	for range n {
		for d := pttl(); d <= last; d = pttl() {
			if time.Now().After(deadline) {
				t.Fatalf("%s not renewed %d times within 20 s", key, n)
			}
			last = d
			time.Sleep(10 * time.Millisecond)
		}
		last = pttl()
	}
}
