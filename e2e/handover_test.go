package e2e

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// TestHandOverPipelined: SET … IFEQ hand-overs pipelined with the commands
// that depend on them answer in order, each seeing the one before.
func TestHandOverPipelined(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	rc := resptest.Dial(t, in.Addr)
	rc.Send("SET", "p", "old", "NX", "PX", "10000")
	rc.Send("SET", "p", "new", "PX", "5000", "IFEQ", "old")
	rc.Send("GET", "p")
	rc.Send("UNLOCK", "p", "old")
	rc.Send("SET", "p", "third", "PX", "5000", "IFEQ", "old")
	rc.Send("UNLOCK", "p", "new")
	for i, want := range []string{"+OK", "+OK", "new", ":0", "$-1", ":1"} {
		if got := readReply(t, rc); len(got) != 1 || got[0] != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
}

// TestHandOverRESP3: over RESP3 a hand-over is OK and contention is the
// RESP3 null (redis.Nil to go-redis), never an error.
func TestHandOverRESP3(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 3)
	ctx := ctxT(t)
	if err := c.SetNX(ctx, "r", "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Do(ctx, "SET", "r", "new", "PX", "5000", "IFEQ", "old").Text(); err != nil || got != "OK" {
		t.Fatalf("hand-over = %q, %v; want OK", got, err)
	}
	if err := c.Do(ctx, "SET", "r", "x", "PX", "5000", "IFEQ", "old").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("hand-over from a token that does not hold it: %v, want redis.Nil", err)
	}
	if vals := in.BackendValues(t, "r"); redlocktest.Count(vals, "new") != 3 {
		t.Fatalf("backends hold %v, want new on each", vals)
	}
}
