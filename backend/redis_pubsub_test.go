package backend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

type delivered struct{ channel, pattern, payload string }

// pubsubNode is a Redis node over srv whose messages arrive on the
// returned channel, closed by the test's cleanup.
func pubsubNode(t *testing.T, srv *redistest.Server) (*Redis, <-chan delivered) {
	t.Helper()
	r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	msgs := make(chan delivered, 64)
	r.Watch(quorum.Watcher{Message: func(ch, pat, payload string) { msgs <- delivered{ch, pat, payload} }})
	return r, msgs
}

func psCall(t *testing.T, r *Redis, cmd quorum.Cmd) quorum.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return quorum.Call(ctx, r, cmd)
}

// The node's subscriptions are counted: the server is subscribed by the
// first Subscribe and unsubscribed by the last Unsubscribe; Publish
// answers the server's receiver count.
func TestRedisPubSubCounted(t *testing.T) {
	srv := redistest.Start(t)
	r, msgs := pubsubNode(t, srv)
	sub := quorum.Cmd{Kind: quorum.Subscribe, Key: "ch"}
	// The subscription connection may not be up yet: its first Subscribe
	// is then kept for it, and the later ones are counted.
	psCall(t, r, sub)
	psCall(t, r, sub)
	if rep := psCall(t, r, quorum.Cmd{Kind: quorum.Subscribe, Key: "c*", N: 1}); rep.Err != nil && !errors.Is(rep.Err, errSubDown) {
		t.Fatalf("PSUBSCRIBE: %v", rep.Err)
	}
	poll(t, "the subscriptions on the server", func() bool {
		m, _ := srv.Client().PubSubNumSub(context.Background(), "ch").Result()
		p, _ := srv.Client().PubSubNumPat(context.Background()).Result()
		return m["ch"] == 1 && p == 1
	})
	if rep := psCall(t, r, quorum.Cmd{Kind: quorum.Publish, Key: "ch", Token: "hello"}); rep.Err != nil || rep.N != 2 {
		t.Fatalf("Publish = %+v, want N 2 (the channel and the pattern)", rep)
	}
	for _, want := range []delivered{{"ch", "", "hello"}, {"ch", "c*", "hello"}} {
		if got := <-msgs; got != want {
			t.Fatalf("delivered %+v, want %+v", got, want)
		}
	}
	unsub := quorum.Cmd{Kind: quorum.Unsubscribe, Key: "ch"}
	if rep := psCall(t, r, unsub); !rep.OK {
		t.Fatalf("Unsubscribe: %+v", rep)
	}
	if rep := psCall(t, r, quorum.Cmd{Kind: quorum.Publish, Key: "ch", Token: "x"}); rep.N != 2 {
		t.Fatalf("after one of two Unsubscribes Publish N = %d, want 2", rep.N)
	}
	if rep := psCall(t, r, unsub); !rep.OK || rep.Err != nil {
		t.Fatalf("the last Unsubscribe: %+v", rep)
	}
	if rep := psCall(t, r, quorum.Cmd{Kind: quorum.Publish, Key: "ch", Token: "x"}); rep.N != 1 {
		t.Fatalf("after the last Unsubscribe Publish N = %d, want 1 (the pattern only)", rep.N)
	}
}

// A server that does not answer fails a Subscribe by its deadline; the
// subscription is still made once the server answers again.
func TestRedisPubSubDeadline(t *testing.T) {
	srv := redistest.Start(t)
	r, _ := pubsubNode(t, srv)
	psCall(t, r, quorum.Cmd{Kind: quorum.Subscribe, Key: "warm"})
	poll(t, "the subscription connection", func() bool {
		m, _ := srv.Client().PubSubNumSub(context.Background(), "warm").Result()
		return m["warm"] == 1
	})
	srv.Stop()
	dl := time.Now().Add(100 * time.Millisecond)
	ch := make(chan quorum.Reply, 1)
	r.Do(dl, quorum.Cmd{Kind: quorum.Subscribe, Key: "later"}, quorum.ReceiverFunc(func(rp quorum.Reply) { ch <- rp }))
	rep := <-ch
	srv.Cont()
	if !errors.Is(rep.Err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe on a stopped server: %+v, want a deadline error", rep)
	}
	poll(t, "the subscription made once the server answers", func() bool {
		m, _ := srv.Client().PubSubNumSub(context.Background(), "later").Result()
		return m["later"] == 1
	})
}
