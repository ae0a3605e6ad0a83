package embedded

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestKindParity runs the in-memory node's cases (memDoCases, which
// TestMemoryDo runs on the node) on a real redis-server through a Redis
// node: the replies and the keys afterwards must be the same, so the two
// nodes agree on every kind. Client scripts are compared by
// TestMemoryEvalAsRedis, and subscriptions have no keys.
func TestKindParity(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	for _, tc := range memDoCases {
		switch tc.cmd.Kind {
		case quorum.Eval, quorum.UndoEval, quorum.ForgetEval, quorum.Subscribe, quorum.Unsubscribe:
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if err := c.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			for i, cmd := range tc.before {
				if rep := quorum.Call(t.Context(), r, cmd); rep.Err != nil {
					t.Fatalf("before[%d]: %v", i, rep.Err)
				}
			}
			got := quorum.Call(t.Context(), r, tc.cmd)
			checkParityReply(t, got, tc.want)
			redistest.CheckStrings(t, c, tc.after)
			for k, want := range tc.ttls {
				if p := c.PTTL(t.Context(), k).Val(); !ttlClose(p, want) {
					t.Errorf("pttl of %s = %v, want %v", k, p, want)
				}
			}
		})
	}
}

// ttlClose: a ttl the Redis node reports, read a little after the node
// whose clock stands still would, rounded to milliseconds.
func ttlClose(got, want time.Duration) bool {
	return got <= want && got > want-5*time.Second
}

func checkParityReply(t *testing.T, got, want quorum.Reply) {
	t.Helper()
	switch {
	case want.Err == nil && got.Err != nil,
		want.Err != nil && got.Err == nil,
		want.Err != nil && want.Err != errAnyMem && !errors.Is(got.Err, want.Err):
		t.Fatalf("err = %v, want %v", got.Err, want.Err)
	case want.Err != nil:
		return
	}
	ttlOK := got.TTL == want.TTL || want.TTL > 0 && ttlClose(got.TTL, want.TTL)
	if got.OK != want.OK || got.Token != want.Token || !ttlOK || got.N != want.N ||
		!slices.Equal(got.Each, want.Each) || !reflect.DeepEqual(got.Value, want.Value) || got.Effect != want.Effect {
		t.Fatalf("reply = %+v, want %+v", got, want)
	}
}
