package e2e

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestPipelinedEvalThenEvalSHA: EVAL of a new body and EVALSHA of its SHA1
// in one pipelined batch, on different keys, run in order as Redis runs
// them: the EVALSHA finds the body the EVAL cached, never NOSCRIPT. Many
// bodies, since each batch is a race the proxy must not lose once. The
// claim is the order, not the speed: a generous node timeout keeps a
// machine's stall from passing for a lost race.
func TestPipelinedEvalThenEvalSHA(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{NodeTimeout: 5 * time.Second})
	c := in.Client(t, 2)
	ctx := context.Background()
	for i := range 300 {
		body := fmt.Sprintf(`return redis.call('set', KEYS[1], ARGV[1], 'PX', 60000) -- %d`, i)
		sum := sha1.Sum([]byte(body))
		p := c.Pipeline()
		e := p.Eval(ctx, body, []string{fmt.Sprint("a", i)}, "v")
		s := p.EvalSha(ctx, hex.EncodeToString(sum[:]), []string{fmt.Sprint("b", i)}, "v")
		_, _ = p.Exec(ctx)
		if e.Err() != nil || s.Err() != nil {
			t.Fatalf("batch %d: EVAL: %v, EVALSHA: %v", i, e.Err(), s.Err())
		}
	}
	if vals := in.BackendValues(t, "b299"); redlocktest.Count(vals, "v") != len(vals) {
		t.Fatalf("b299 on the backends = %q", vals)
	}
}
