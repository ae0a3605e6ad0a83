package commands

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestLockInfoShapes(t *testing.T) {
	f := newFixture(t, Options{})
	if got := f.do("LOCKINFO", "free"); got != "{$key $free $verdict $not held $token nil $pttl :-2 $quorum :2 $answered :3 $fence nil $holds nil $backends ["+
		"{$backend $m1 $token nil $pttl :-2 $error nil $fence nil $holds nil} "+
		"{$backend $m2 $token nil $pttl :-2 $error nil $fence nil $holds nil} "+
		"{$backend $m3 $token nil $pttl :-2 $error nil $fence nil $holds nil}]}" {
		t.Errorf("LOCKINFO of a free key = %s", got)
	}
	if got := f.do("LOCKINFO"); got != "-ERR wrong number of arguments for 'lockinfo' command" {
		t.Errorf("LOCKINFO without key = %s", got)
	}

	tok := f.lock(t, "k")
	got := f.do("LOCKINFO", "k")
	want := regexp.MustCompile(`^\{\$key \$k \$verdict \$held \$token \$` + tok + ` \$pttl :\d+ \$quorum :2 \$answered :3 \$fence nil \$holds nil \$backends \[`)
	if !want.MatchString(got) || strings.Count(got, "$token $"+tok) < 3 {
		t.Errorf("LOCKINFO of a held key = %s", got)
	}
	// Acquire returns once a majority granted; the third node's SET is
	// still on its way, and lands shortly.
	eventually(t, 5*time.Second, "every backend holds the token", func() bool {
		got = f.do("LOCKINFO", "k")
		return strings.Count(got, "$token $"+tok) == 4
	})
}

func TestLockInfoFenceAndHolds(t *testing.T) {
	f := newFixture(t, Options{})
	got := f.do("LOCK", "f", "10000", "FENCE")
	fence := regexp.MustCompile(`:(\d+)\]$`).FindStringSubmatch(got)
	if fence == nil {
		t.Fatalf("LOCK … FENCE = %s", got)
	}
	if info := f.do("LOCKINFO", "f"); !strings.Contains(info, "$fence :"+fence[1]+" $holds nil $backends") {
		t.Errorf("LOCKINFO after FENCE %s = %s", fence[1], info)
	}
	for i := 0; i < 3; i++ {
		if got := f.do("LOCK", "o", "10000", "OWNER", "me"); !strings.HasPrefix(got, "[$") {
			t.Fatalf("LOCK … OWNER #%d = %s", i, got)
		}
	}
	info := f.do("LOCKINFO", "o")
	// Acquire returns once a majority granted, so the third node may lag.
	if !strings.Contains(info, "$holds :3 $backends") || strings.Count(info, "$holds :3}") < 2 {
		t.Errorf("LOCKINFO of a lock held 3 times = %s", info)
	}
}

func TestLockInfoRealRedisWithOneDown(t *testing.T) {
	servers := redistest.StartN(t, 3)
	var nodes []quorum.Node
	for _, s := range servers {
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond // generous: the machine is shared
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := New(cl, Options{})
	f := &fixture{h: h, s: h.NewSession("127.0.0.1:1")}
	t.Cleanup(func() { h.CloseSession(f.s) })

	tok := f.lock(t, "k")
	servers[2].Kill()
	got := f.do("LOCKINFO", "k")
	if !strings.Contains(got, "$verdict $held $token $"+tok) || !strings.Contains(got, "$answered :2") {
		t.Errorf("LOCKINFO with one backend down = %s", got)
	}
	dead := regexp.MustCompile(`\{\$backend \$` + regexp.QuoteMeta(servers[2].Addr()) + ` \$token nil \$pttl :-2 \$error \$[^$]+\$fence nil \$holds nil\}`)
	if !dead.MatchString(got) {
		t.Errorf("dead backend's view missing its error: %s", got)
	}
	servers[1].Kill()
	if got := f.do("LOCKINFO", "k"); !strings.Contains(got, "$verdict $no quorum $token nil $pttl :-2 $quorum :2 $answered :1") {
		t.Errorf("LOCKINFO with two of three down = %s", got)
	}
}
