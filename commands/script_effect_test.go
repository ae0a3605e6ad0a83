package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// TestScriptEffectEmbedded: the embedded nodes hold a script's expiries
// to max-ttl and end a session lock that a script gave an expiry, as
// Redis backends do.
func TestScriptEffectEmbedded(t *testing.T) {
	var nodes []quorum.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		m := embedded.New(n)
		t.Cleanup(func() { _ = m.Close() })
		nodes = append(nodes, m)
	}
	cfg := quorum.DefaultConfig()
	cfg.MaxTTL = 5 * time.Second
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	f := client(t, New(cl, Options{MaxTTL: 5 * time.Second}))
	for _, body := range []string{
		`return redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2])`,
		`redis.call('set',KEYS[1],ARGV[1]) return redis.call('pexpire',KEYS[1],ARGV[2])`,
	} {
		if got := f.do(eval(body, k1("k"), "t", "60000")...); got != "-ERR ttl exceeds max-ttl" {
			t.Errorf("%s of 60s = %s", body, got)
		}
		if got := f.do("GET", "k"); got != "nil" {
			t.Errorf("after the refused script GET k = %s", got)
		}
	}
	if got := f.do("SET", "s", "111"); got != "+OK" {
		t.Fatalf("SET s 111 = %s", got)
	}
	if got := f.do(eval(semaphoreRefresh, k1("s"), "111", "4000")...); got != ":1" {
		t.Fatalf("refresh = %s", got)
	}
	got := f.do("PTTL", "s")
	if n, ok := parseInt(strings.TrimPrefix(got, ":")); !ok || n <= 0 || n > 4000 {
		t.Fatalf("PTTL of a session lock a script gave 4s = %s", got)
	}
}
