package backend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faults"
)

// A connection the node gave up on sends nothing after it: here a
// compare-and-delete of k=tok goes out while the link to the server is
// cut, the node fails it and resets the connection; after the heal the
// same token is stored again (a later round's grant). TCP would
// retransmit the old connection's unsent bytes once the link is back, so
// the old compare-and-delete would delete the later grant, unless the
// reset dropped them.
func TestResetConnectionSendsNothingAfterHeal(t *testing.T) {
	split := faults.StartSplit(t, 1, 2)
	n, err := backend.NewRedis(split.Addrs(0)[0], backend.RedisOptions{NodeTimeout: 100 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	call := func(cmd quorum.Cmd) quorum.Reply {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		return quorum.Call(ctx, n, cmd)
	}
	const k, tok = "reset:k", "tok-1"
	if rep := call(quorum.Cmd{Kind: quorum.Get, Key: k}); rep.Err != nil {
		t.Fatalf("Get before the cut: %v", rep.Err)
	}
	split.Cut(t, 0)
	if rep := call(quorum.Cmd{Kind: quorum.CompareAndDelete, Key: k, Token: tok}); rep.Err == nil {
		t.Fatal("a compare-and-delete over a cut link was answered")
	}
	// The old connection is gone once a command on the key needs a dial
	// that fails within the probe's budget: once the kernel gave up
	// resolving the cut server's address (no route to host, some seconds
	// after the cut). A heal before that was seen to deliver the aborted
	// connection's commands (in the server's SLOWLOG), most likely from
	// the kernel's neighbour queue, which closing a socket does not
	// empty; a heal after it was never seen to.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := call(quorum.Cmd{Kind: quorum.Get, Key: k})
		if rep.Err != nil && strings.Contains(rep.Err.Error(), "dial") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node kept its connection over the cut link: %v", rep.Err)
		}
	}
	split.Heal(t, 0)
	direct := redis.NewClient(&redis.Options{Addr: split.Addrs(1)[0], Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { direct.Close() })
	ctx := context.Background()
	if err := direct.Set(ctx, k, tok, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// TCP retransmits within a few seconds of the heal; wait well past it.
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		if v, err := direct.Get(ctx, k).Result(); v != tok {
			t.Fatalf("%v after the heal the later grant of %s is gone (%q, %v): the old connection's compare-and-delete landed", time.Since(end.Add(-8*time.Second)).Round(time.Millisecond), k, v, err)
		}
		time.Sleep(50 * time.Millisecond) // how long the grant stands is the behaviour under test
	}
}
