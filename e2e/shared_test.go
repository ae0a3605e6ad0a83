package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faults"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// lockSharedReply sends LOCK key ttl SHARED (and extra options) and
// returns the reply: token and validity, ok false for null.
func lockSharedReply(ctx context.Context, c doer, key string, ttl int, extra ...any) (tok string, v int64, ok bool, err error) {
	args := append([]any{"LOCK", key, ttl, "SHARED"}, extra...)
	res, err := c.Do(ctx, args...).Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return "", 0, false, nil
	case err != nil:
		return "", 0, false, err
	case len(res) < 2:
		return "", 0, false, fmt.Errorf("LOCK SHARED reply %v", res)
	}
	tok, _ = res[0].(string)
	v, _ = res[1].(int64)
	return tok, v, true, nil
}

// lockShared takes a read lock or fails the test.
func lockShared(t *testing.T, c doer, key string, ttl int, extra ...any) string {
	t.Helper()
	tok, v, ok, err := lockSharedReply(ctxT(t), c, key, ttl, extra...)
	if err != nil || !ok || v <= 0 || v > int64(ttl) {
		t.Fatalf("LOCK %s %d SHARED %v = %q %d %v %v; want a read lock", key, ttl, extra, tok, v, ok, err)
	}
	if !strings.HasPrefix(tok, "shared:") {
		t.Fatalf("reader token %q", tok)
	}
	return tok
}

// wantSharedNull expects LOCK … SHARED to answer null.
func wantSharedNull(t *testing.T, c doer, key, what string) {
	t.Helper()
	if tok, _, ok, err := lockSharedReply(ctxT(t), c, key, 10000); ok || err != nil {
		t.Fatalf("%s: LOCK SHARED = %q %v %v; want null", what, tok, ok, err)
	}
}

// readersOn is each backend's live readers of key (its sorted set's size)
// and what the key itself stores there.
func readersOn(t *testing.T, backends []*redistest.Server, key string) ([]int64, []string) {
	t.Helper()
	var ns []int64
	var vals []string
	for _, s := range backends {
		n, err := s.Client().ZCard(ctxT(t), quorum.SharedKey(key)).Result()
		if err != nil {
			n = -1
		}
		v, err := s.Client().Get(ctxT(t), key).Result()
		if err != nil {
			v = "<" + err.Error() + ">"
		}
		ns, vals = append(ns, n), append(vals, v)
	}
	return ns, vals
}

// waitClient is a RESP2 client of in whose replies may take as long as a
// LOCK … WAIT of the tests (go-redis reads for 3s by default).
func waitClient(t *testing.T, in *redlocktest.Instance) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// redlockV5Acquire is node-redlock v5's acquire script: all keys absent →
// set them all, else 0.
const redlockV5Acquire = `
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end
  return #KEYS
`

// Readers through two proxies share the key; every kind of exclusive
// acquire (LOCK, SET NX through the proxy and on a backend itself, a
// library's script, LOCK … OWNER) is refused while they hold it; the key
// is free once the last one unlocks, and then a writer keeps readers out.
func TestSharedReadersTwoProxies(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{})
	clients := []*redis.Client{a.Client(t, 2), a.Client(t, 3), b.Client(t, 2), b.Client(t, 3)}
	const key = "rw"
	var toks []string
	for _, c := range clients {
		toks = append(toks, lockShared(t, c, key, 30000))
	}
	ns, vals := readersOn(t, a.Backends, key)
	for i := range ns {
		if ns[i] != int64(len(clients)) || vals[i] != quorum.SharedMarker {
			t.Fatalf("backend %d: %d readers, key %q; want %d readers and the marker", i, ns[i], vals[i], len(clients))
		}
	}
	for _, c := range clients[1:3] {
		wantNull(t, c, "LOCK among readers", "LOCK", key, 1000)
		wantNull(t, c, "LOCK OWNER among readers", "LOCK", key, 1000, "OWNER", "me")
		if ok, err := c.SetNX(ctxT(t), key, "x", time.Second).Result(); ok || err != nil {
			t.Fatalf("SET NX PX among readers = %v %v", ok, err)
		}
		if n, err := c.Eval(ctxT(t), redlockV5Acquire, []string{key}, "x", 1000).Int(); n != 0 || err != nil {
			t.Fatalf("node-redlock acquire among readers = %d %v", n, err)
		}
	}
	if ok, err := a.Backends[0].Client().SetNX(ctxT(t), key, "x", time.Second).Result(); ok || err != nil {
		t.Fatalf("SET NX on a backend among readers = %v %v", ok, err)
	}
	if v, err := clients[2].Get(ctxT(t), key).Result(); v != quorum.SharedMarker || err != nil {
		t.Fatalf("GET of a key held shared = %q %v", v, err)
	}
	if p, err := clients[2].PTTL(ctxT(t), key).Result(); p <= 20*time.Second || err != nil {
		t.Fatalf("PTTL of a key held shared = %v %v", p, err)
	}
	for i, tok := range toks {
		if n, err := clients[(i+1)%len(clients)].Do(ctxT(t), "UNLOCK", key, tok).Int(); n != 1 || err != nil {
			t.Fatalf("UNLOCK of reader %d (from another connection) = %d %v", i, n, err)
		}
		if i < len(toks)-1 {
			wantNull(t, clients[0], "LOCK while a reader remains", "LOCK", key, 1000)
		}
	}
	for i, s := range a.Backends {
		if n, err := s.Client().Exists(ctxT(t), key, quorum.SharedKey(key)).Result(); n != 0 || err != nil {
			t.Fatalf("backend %d keeps %d keys of the released read lock (%v)", i, n, err)
		}
	}
	wtok, _ := lock(t, clients[3], key, 30000)
	wantSharedNull(t, clients[0], key, "reader while a writer holds")
	wantSharedNull(t, clients[2], key, "reader while a writer holds, other proxy")
	if n, err := clients[1].Do(ctxT(t), "UNLOCK", key, wtok).Int(); n != 1 || err != nil {
		t.Fatalf("writer's UNLOCK = %d %v", n, err)
	}
	lockShared(t, clients[2], key, 1000)
}

// RENEW, UNLOCK (plain, pipelined, by script), FENCE and LOCKINFO on read
// locks; the marker itself is no reader's token.
func TestSharedRenewUnlockFenceInfo(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	const key = "rw:cmds"
	ctx := ctxT(t)
	r1 := lockShared(t, c, key, 2000)
	r2 := lockShared(t, c, key, 2000)
	if v, err := c.Do(ctx, "RENEW", key, r1, 40000).Int64(); err != nil || v <= 30000 {
		t.Fatalf("RENEW of a reader = %d %v", v, err)
	}
	if p, err := c.PTTL(ctx, key).Result(); err != nil || p <= 30*time.Second {
		t.Fatalf("PTTL after a reader's RENEW = %v %v; want the longest reader's", p, err)
	}
	// The marker is the nodes' own value: no client may name it.
	for _, args := range [][]any{{"UNLOCK", key, quorum.SharedMarker}, {"RENEW", key, quorum.SharedMarker, 1000}, {"DELIFEQ", key, quorum.SharedMarker}} {
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "reserved namespace") {
			t.Fatalf("%v = %v; want the reserved-value refusal", args, err)
		}
	}
	if ns, _ := readersOn(t, in.Backends, key); ns[0] != 2 || ns[1] != 2 || ns[2] != 2 {
		t.Fatalf("readers after the refused commands: %v, want 2 everywhere", ns)
	}
	info, err := c.Do(ctx, "LOCKINFO", key).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if got := lockInfoField(info, "holds"); got != int64(2) {
		t.Fatalf("LOCKINFO holds = %v, want the 2 readers (%v)", got, info)
	}
	if got := lockInfoField(info, "token"); got != quorum.SharedMarker {
		t.Fatalf("LOCKINFO token = %v", got)
	}
	pipe := c.Pipeline()
	u1 := pipe.Do(ctx, "UNLOCK", key, r1)
	u2 := pipe.Do(ctx, "UNLOCK", key, r2)
	u3 := pipe.Do(ctx, "UNLOCK", key, r2)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n1, n2, n3 := u1.Val(), u2.Val(), u3.Val(); n1 != int64(1) || n2 != int64(1) || n3 != int64(0) {
		t.Fatalf("pipelined UNLOCKs = %v %v %v; want 1 1 0", n1, n2, n3)
	}
	if v, err := c.Exists(ctx, key).Result(); v != 0 || err != nil {
		t.Fatalf("EXISTS after the readers left = %d %v", v, err)
	}
	f1 := fenceOf(t, c, "LOCK", key, 10000, "SHARED", "FENCE")
	f2 := fenceOf(t, c, "LOCK", key, 10000, "SHARED", "FENCE")
	r3 := lockShared(t, c, key, 10000)
	if f2 <= f1 {
		t.Fatalf("readers' fences %d then %d: want increasing", f1, f2)
	}
	if n, err := c.Eval(ctx, cad, []string{key}, r3).Int(); n != 1 || err != nil {
		t.Fatalf("compare-and-delete script of a reader = %d %v", n, err)
	}
	pipe = c.Pipeline()
	l1 := pipe.Do(ctx, "LOCK", key, 10000, "SHARED")
	l2 := pipe.Do(ctx, "LOCK", key, 10000)
	l3 := pipe.Do(ctx, "LOCK", key, 10000, "SHARED")
	_, _ = pipe.Exec(ctx)
	g1, _ := l1.Val().([]any)
	g3, _ := l3.Val().([]any)
	if len(g1) != 2 || !errors.Is(l2.Err(), redis.Nil) || len(g3) != 2 {
		t.Fatalf("pipelined reader, writer, reader = %v, %v %v, %v", l1.Val(), l2.Val(), l2.Err(), l3.Val())
	}
	r4, _ := g3[0].(string)
	if n, err := c.Do(ctx, "DELIFEQ", key, r4).Int(); n != 1 || err != nil {
		t.Fatalf("DELIFEQ of a reader = %d %v", n, err)
	}
	if n, err := c.Del(ctx, key).Result(); n != 1 || err != nil {
		t.Fatalf("DEL of a key held shared = %d %v", n, err)
	}
	if f3 := fenceOf(t, c, "LOCK", key, 10000, "FENCE"); f3 <= f2 {
		t.Fatalf("writer's fence %d after readers' %d", f3, f2)
	}
}

func fenceOf(t *testing.T, c doer, args ...any) int64 {
	t.Helper()
	res, err := c.Do(ctxT(t), args...).Slice()
	if err != nil || len(res) != 3 {
		t.Fatalf("%v = %v %v; want [token validity fence]", args, res, err)
	}
	f, _ := res[2].(int64)
	return f
}

// lockInfoField reads one field of LOCKINFO's RESP2 reply.
func lockInfoField(info []any, name string) any {
	for i := 0; i+1 < len(info); i += 2 {
		if info[i] == name {
			return info[i+1]
		}
	}
	return nil
}

// A KEEPALIVE reader is renewed past its ttl while its connection lives
// and released at once when it closes.
func TestSharedKeepalive(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const key = "rw:keep"
	kc := soleClient(t, in)
	tok := lockShared(t, kc, key, 600, "KEEPALIVE")
	other := lockShared(t, in.Client(t, 2), key, 60000)
	first := readerExpiry(t, in.Backends[0], key, tok)
	pollFor(t, "the kept reader's renewal", func() bool { return readerExpiry(t, in.Backends[0], key, tok) > first })
	kc.Close()
	pollFor(t, "the kept reader's release", func() bool {
		for _, s := range in.Backends {
			if readerExpiry(t, s, key, tok) != 0 {
				return false
			}
		}
		return true
	})
	if n, _ := readersOn(t, in.Backends, key); n[0] != 1 {
		t.Fatalf("readers left: %v; want only %s", n, other)
	}
}

// readerExpiry is tok's expiry in the readers of key on s (0: absent).
func readerExpiry(t *testing.T, s *redistest.Server, key, tok string) float64 {
	t.Helper()
	v, err := s.Client().ZScore(ctxT(t), quorum.SharedKey(key), tok).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Readers waiting behind a writer are woken by its release, on either
// proxy: with a retry jitter longer than their WAIT, only a wake gets
// them in. A writer waiting behind readers is woken by the last reader's
// release the same way.
func TestSharedWaitWoken(t *testing.T) {
	backends := redistest.StartN(t, 3)
	holdVia := redlocktest.StartOver(t, backends, redlocktest.Options{})
	waitVia := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	holder := holdVia.Client(t, 2)
	const key = "rw:wait"
	wtok, _ := lock(t, holder, key, 60000)
	got := waitingReaders(t, waitVia, key, 2)
	if n, err := holder.Do(ctxT(t), "UNLOCK", key, wtok).Int(); n != 1 || err != nil {
		t.Fatalf("writer's UNLOCK = %d %v", n, err)
	}
	readers := readersIn(t, got, 2)
	writerWaitsForReaders(t, backends, holder, waitVia, key, readers)
}

// The writer's release may reach one backend only after the readers it
// kept waiting got in on the others (here that backend's copy is held
// back until they did). That backend refused the readers, so it ends with
// neither the writer nor a reader: a waiting writer's tries are granted
// there (and undone), and only the other backends, a majority, keep its
// mark. That keeps new readers out all the same, and the last reader's
// release still wakes the writer.
func TestSharedWaitWokenBackendBehind(t *testing.T) {
	backends := redistest.StartN(t, 3)
	behind, err := faults.Listen(backends[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { behind.Close() })
	holdVia := redlocktest.StartOverAddrs(t, []string{behind.Addr(), backends[1].Addr(), backends[2].Addr()}, redlocktest.Options{})
	waitVia := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	holder := holdVia.Client(t, 2)
	const key = "rw:behind"
	wtok, _ := lock(t, holder, key, 60000)
	// The grant came from a majority; backend 0's copy may still be on its
	// way through the fault proxy.
	pollFor(t, "the writer on backend 0", func() bool {
		v, _ := backends[0].Client().Get(ctxT(t), key).Result()
		return v == wtok
	})
	got := waitingReaders(t, waitVia, key, 2)
	behind.Set(faults.Blackhole)
	if n, err := holder.Do(ctxT(t), "UNLOCK", key, wtok).Int(); n != 1 || err != nil {
		t.Fatalf("writer's UNLOCK = %d %v", n, err)
	}
	readers := readersIn(t, got, 2)
	// The held-back release lands on backend 0 now.
	if n, err := backends[0].Client().Eval(ctxT(t), cad, []string{key}, wtok).Int(); n != 1 || err != nil {
		t.Fatalf("the writer's late release on backend 0 = %d %v", n, err)
	}
	behind.Set(faults.Pass)
	if ns, _ := readersOn(t, backends, key); ns[0] != 0 || ns[1] != 2 || ns[2] != 2 {
		t.Fatalf("readers per backend: %v; want none on backend 0 (it refused them) and 2 on the others", ns)
	}
	writerWaitsForReaders(t, backends, waitVia.Client(t, 2), waitVia, key, readers)
}

// readerReply is what a waiting reader got.
type readerReply struct {
	tok string
	err error
}

// waitingReaders starts n readers of key through via, each on its own
// connection with LOCK … SHARED WAIT (shorter than via's retry pause, so
// only a wake gets them in), and returns once via counts all of them
// waiting; their replies come on the channel.
func waitingReaders(t *testing.T, via *redlocktest.Instance, key string, n int) <-chan readerReply {
	t.Helper()
	got := make(chan readerReply, n)
	for range n {
		c := waitClient(t, via)
		go func() {
			tok, _, ok, err := lockSharedReply(context.Background(), c, key, 60000, "WAIT", sharedWait.Milliseconds())
			if err == nil && !ok {
				err = errors.New("LOCK SHARED WAIT answered null")
			}
			got <- readerReply{tok, err}
		}()
	}
	pollFor(t, "the waiting readers", func() bool { return via.Cluster.Waiters(key) == n })
	return got
}

// sharedWait is the WAIT of the waiters of the read-write lock tests:
// shorter than their proxy's retry pause (slowJitter), so a waiter that
// gets in was woken.
const sharedWait = slowJitter / 2

// readersIn collects n waiting readers' tokens, failing the test on any
// that did not get in.
func readersIn(t *testing.T, got <-chan readerReply, n int) []string {
	t.Helper()
	var toks []string
	for range n {
		r := <-got
		if r.err != nil {
			t.Fatalf("waiting reader: %v", r.err)
		}
		toks = append(toks, r.tok)
	}
	return toks
}

// writerWaitsForReaders is the other way round: a writer waits through via
// for the readers holding key, its mark keeps a new reader out, and the
// last reader's release (through holder) wakes it.
//
// The mark lives on the backends that refused the writer's marked try: a
// backend that missed the readers grants that try (it is undone) and
// keeps no mark. A new reader needs a majority, so the marks of a
// majority keep it out: that is what the test waits for.
func writerWaitsForReaders(t *testing.T, backends []*redistest.Server, holder doer, via *redlocktest.Instance, key string, readers []string) {
	t.Helper()
	waiter := waitClient(t, via)
	res := make(chan error, 1)
	go func() {
		res <- waiter.Do(context.Background(), "LOCK", key, 60000, "WAIT", sharedWait.Milliseconds()).Err()
	}()
	defer func() {
		if t.Failed() {
			t.Logf("backends: %s", sharedStateOf(t, backends, key))
		}
	}()
	pollFor(t, "the writer's mark on a majority", func() bool {
		select {
		case err := <-res:
			t.Fatalf("waiting writer answered %v before the readers' release", err)
		default:
		}
		return len(writerMarked(t, backends, key)) >= via.Cluster.Quorum()
	})
	wantSharedNull(t, holder, key, "a new reader while a writer waits")
	for _, r := range readers {
		if n, err := holder.Do(ctxT(t), "UNLOCK", key, r).Int(); n != 1 || err != nil {
			t.Fatalf("reader's UNLOCK = %d %v", n, err)
		}
	}
	if err := <-res; err != nil {
		t.Fatalf("waiting writer after the last reader's UNLOCK: %v", err)
	}
}

// writerMarked lists the backends (by index) that keep a waiting writer's
// mark on key.
func writerMarked(t *testing.T, backends []*redistest.Server, key string) []int {
	t.Helper()
	var marked []int
	for i, s := range backends {
		if n, err := s.Client().Exists(ctxT(t), quorum.WriterKey(key)).Result(); n == 1 && err == nil {
			marked = append(marked, i)
		}
	}
	return marked
}

// sharedStateOf describes what each backend keeps of key's read-write
// lock: the key's value, its live readers, and the remaining lives of the
// writer's mark and of the wait mark (negative: absent).
func sharedStateOf(t *testing.T, backends []*redistest.Server, key string) string {
	t.Helper()
	var b strings.Builder
	for i, s := range backends {
		c := s.Client()
		v, err := c.Get(ctxT(t), key).Result()
		if err != nil {
			v = "<" + err.Error() + ">"
		}
		n, _ := c.ZCard(ctxT(t), quorum.SharedKey(key)).Result()
		wm, _ := c.Do(ctxT(t), "pttl", quorum.WriterKey(key)).Int64()
		wk, _ := c.Do(ctxT(t), "pttl", slot.Key("redlockd:wait:", key)).Int64()
		fmt.Fprintf(&b, "[%d: key %q, %d readers, writer's mark %dms, wait mark %dms] ", i, v, n, wm, wk)
	}
	return b.String()
}

// A reader that hangs up while it waits stops waiting and takes nothing;
// a writer that hangs up while it waits takes its mark away at once, so
// readers get in again. (The long node timeout makes each of the writer's
// marks live 20s: only its removal lets them go within the poll's 10s.)
func TestSharedHangUpWhileWaiting(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{NodeTimeout: 5 * time.Second})
	c := in.Client(t, 2)
	const key = "rw:gone"
	wtok, _ := lock(t, c, key, 60000)
	conn, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "LOCK %s 60000 SHARED WAIT 3600000\r\n", key)
	pollFor(t, "the waiting reader", func() bool { return in.Cluster.Waiters(key) == 1 })
	conn.Close()
	pollFor(t, "the reader's wait to end", func() bool { return in.Cluster.Waiters(key) == 0 })
	if n, err := c.Do(ctxT(t), "UNLOCK", key, wtok).Int(); n != 1 || err != nil {
		t.Fatalf("writer's UNLOCK = %d %v", n, err)
	}
	for i, s := range in.Backends {
		if n, err := s.Client().Exists(ctxT(t), key, quorum.SharedKey(key)).Result(); n != 0 || err != nil {
			t.Fatalf("backend %d: %d keys of the gone reader (%v)", i, n, err)
		}
	}
	rtok := lockShared(t, c, key, 60000)
	wconn, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(wconn, "LOCK %s 60000 WAIT 3600000\r\n", key)
	pollFor(t, "the writer's mark", func() bool {
		n, _ := in.Backends[0].Client().Exists(ctxT(t), quorum.WriterKey(key)).Result()
		return n == 1
	})
	wantSharedNull(t, c, key, "a reader while the writer waits")
	wconn.Close()
	pollFor(t, "the hung-up writer's mark to go", func() bool {
		for _, s := range in.Backends {
			if n, err := s.Client().Exists(ctxT(t), quorum.WriterKey(key)).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	})
	lockShared(t, c, key, 60000)
	if n, err := c.Do(ctxT(t), "UNLOCK", key, rtok).Int(); n != 1 || err != nil {
		t.Fatalf("first reader's UNLOCK = %d %v", n, err)
	}
}

// With a minority of backends down, readers are still granted through
// both proxies, writers still refused, and UNLOCK still frees the key.
func TestSharedMinorityDown(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{NodeTimeout: 200 * time.Millisecond})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{NodeTimeout: 200 * time.Millisecond})
	a.Backends[2].Kill()
	ca, cb := a.Client(t, 2), b.Client(t, 3)
	const key = "rw:minority"
	r1, r2 := lockShared(t, ca, key, 30000), lockShared(t, cb, key, 30000)
	wantNull(t, cb, "writer among readers, a backend down", "LOCK", key, 1000)
	for _, r := range []string{r1, r2} {
		if v, err := ca.Do(ctxT(t), "RENEW", key, r, 30000).Int64(); v <= 0 || err != nil {
			t.Fatalf("RENEW with a backend down = %d %v", v, err)
		}
		if n, err := cb.Do(ctxT(t), "UNLOCK", key, r).Int(); n != 1 || err != nil {
			t.Fatalf("UNLOCK with a backend down = %d %v", n, err)
		}
	}
	lock(t, ca, key, 1000)
}

// A read lock that reaches only a minority is taken back where it landed,
// and only it: a reader already there keeps its hold.
func TestSharedFailedRoundLeavesNothing(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	const key = "rw:undo"
	first := lockShared(t, c, key, 60000)
	for _, s := range in.Backends[1:] {
		if err := s.Client().Set(ctxT(t), key, "writer", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantSharedNull(t, c, key, "a reader where a writer holds a majority")
	ns, vals := readersOn(t, in.Backends, key)
	if ns[0] != 1 || vals[0] != quorum.SharedMarker || readerExpiry(t, in.Backends[0], key, first) == 0 {
		t.Fatalf("backend 0 after the failed round: %d readers, key %q; want the first reader alone", ns[0], vals[0])
	}
	for _, s := range in.Backends[1:] {
		if v, _ := s.Client().Get(ctxT(t), key).Result(); v != "writer" {
			t.Fatalf("backend %s: key %q, want the writer's", s.Addr(), v)
		}
	}
}

// The backends restart empty one at a time: a KEEPALIVE reader stays held
// throughout, is put back on each restarted backend as a reader, and no
// writer is granted the key meanwhile.
func TestSharedKeptReaderSurvivesRollingRestart(t *testing.T) {
	in := redlocktest.Start(t, restartOptions())
	a := soleClient(t, in)
	other := in.Client(t, 2)
	pollFor(t, "every backend watched", func() bool {
		for _, s := range in.Cluster.NodeStates() {
			if s.RunID == "" {
				return false
			}
		}
		return true
	})
	const key = "rw:restart"
	tok := lockShared(t, a, key, 1500, "KEEPALIVE")
	for i, s := range in.Backends {
		old := in.Cluster.NodeStates()[i].RunID
		s.Restart(t)
		pollFor(t, "the restart seen", func() bool { return in.Cluster.NodeStates()[i].RunID != old })
		wantNull(t, other, "a writer during the restart", "LOCK", key, 1000)
		pollFor(t, "the reader restored on the restarted backend", func() bool {
			return !in.Cluster.NodeStates()[i].Quarantined && readerExpiry(t, s, key, tok) > 0
		})
		if v := s.Client().Get(ctxT(t), key).Val(); v != quorum.SharedMarker {
			t.Fatalf("restarted backend %d stores %q, want the marker", i, v)
		}
		wantNull(t, other, "a writer after the restart", "LOCK", key, 1000)
	}
	if n := in.Handler.KeepaliveStats().Lost; n != 0 {
		t.Fatalf("%d kept lock(s) counted lost", n)
	}
	if n, err := a.Do(ctxT(t), "UNLOCK", key, tok).Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK = %d, %v; want 1", n, err)
	}
}

// A read lock taken after SELECT lives in that db of every backend and
// excludes writers there only; IFEQ refuses to hand over a read lock.
func TestSharedSelectAndHandOver(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := soleClient(t, in)
	const key = "rw:db"
	ctx := ctxT(t)
	if err := c.Do(ctx, "SELECT", 3).Err(); err != nil {
		t.Fatal(err)
	}
	tok := lockShared(t, c, key, 30000)
	for i, s := range in.Backends {
		db3 := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: 3})
		n, err := db3.ZCard(ctx, quorum.SharedKey(key)).Result()
		db3.Close()
		if n != 1 || err != nil {
			t.Fatalf("backend %d db 3: %d readers (%v)", i, n, err)
		}
		if n, err := s.Client().Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("backend %d holds the key in db 0 (read: %v)", i, err)
		}
	}
	wantNull(t, c, "a writer in db 3", "LOCK", key, 1000)
	lock(t, in.Client(t, 2), key, 1000) // db 0 is another lock
	for _, args := range [][]any{{"SET", key, "x", "PX", 1000, "IFEQ", quorum.SharedMarker}, {"SET", key, "x", "PX", 1000, "IFEQ", tok}} {
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "SHARED") && !strings.Contains(err.Error(), "reserved namespace") {
			t.Fatalf("%v = %v; want the refusal", args, err)
		}
	}
	if n, err := c.Do(ctx, "UNLOCK", key, tok).Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK in db 3 = %d %v", n, err)
	}
}

// A key is a read-write lock or a semaphore at a time: readers keep
// permits out and permits keep readers out.
func TestSharedAndPermitsExclude(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 3)
	const key = "rw:sem"
	r := lockShared(t, c, key, 30000)
	wantNull(t, c, "a permit among readers", "LOCK", key, 1000, "PERMITS", 2)
	if n, err := c.Do(ctxT(t), "UNLOCK", key, r).Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK = %d %v", n, err)
	}
	p, _ := lock(t, c, key, 30000, "PERMITS", 2)
	wantSharedNull(t, c, key, "a reader among permits")
	if n, err := c.Do(ctxT(t), "UNLOCK", key, p).Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK of the permit = %d %v", n, err)
	}
	lockShared(t, c, key, 1000)
}

// PEXPIRE on a read-locked key is a force operation on the marker only:
// once it expires a writer is granted while the reader, still in the
// readers' set, learns it lost the key at its next RENEW (null).
func TestSharedPexpireIsATakeover(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	const key = "rw:pexpire"
	ctx := ctxT(t)
	r := lockShared(t, c, key, 30000)
	if ok, err := c.PExpire(ctx, key, time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE = %v %v", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var w string
	for {
		res, err := c.Do(ctx, "LOCK", key, 10000).Slice()
		if err == nil {
			w, _ = res[0].(string)
			break
		}
		if !errors.Is(err, redis.Nil) || time.Now().After(deadline) {
			t.Fatalf("LOCK after PEXPIRE of the marker: %v; want a grant", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ns, _ := readersOn(t, in.Backends, key); ns[0] != 1 || ns[1] != 1 || ns[2] != 1 {
		t.Fatalf("readers beside the writer: %v, want the reader still recorded everywhere", ns)
	}
	if err := c.Do(ctx, "RENEW", key, r, 30000).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the reader's RENEW under the writer = %v; want null", err)
	}
	if v, err := c.Do(ctx, "UNLOCK", key, w).Int64(); err != nil || v != 1 {
		t.Fatalf("the writer's UNLOCK = %d %v", v, err)
	}
}
