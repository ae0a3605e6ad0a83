package faulttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// A fleet: three redlockd processes in front of the same three backends,
// with clients spread over them. The proxies are
// interchangeable, so WAIT wake-ups, FENCE, OWNER holds and KEEPALIVE
// must agree across them.

// fleetRetryDelay is the fleet's --retry-delay: far longer than any WAIT
// in these tests, so that a waiter that gets the lock before its WAIT runs
// out was woken by a release notice, never by its retry tick.
const fleetRetryDelay = time.Hour

// fleet is the proxies' addresses, A, B and C.
type fleet []string

func startFleet(t *testing.T, servers []*redistest.Server, n int) (fleet, []*redlocktest.Process) {
	t.Helper()
	bin := redlocktest.Build(t, "./cmd/redlockd")
	var f fleet
	var procs []*redlocktest.Process
	for range n {
		p := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "300ms",
			"--retry-delay", fleetRetryDelay.String())
		f, procs = append(f, p.Addr), append(procs, p)
	}
	return f, procs
}

// fleetClient is a client of the proxy at addr in database db, speaking
// protocol (2 or 3), whose reads outlast any WAIT of these tests. One
// connection, so that a lock bound to it lives as long as the client.
func fleetClient(t *testing.T, addr string, db, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: protocol, DisableIdentity: true,
		PoolSize: 1, ReadTimeout: time.Minute, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// grant is a LOCK reply: ok false for null.
type grant struct {
	ok       bool
	token    string
	validity time.Duration
	fence    int64 // 0 without FENCE
}

// lockCmd sends LOCK key ttl-ms with opts (WAIT ms, FENCE, OWNER id, …).
func lockCmd(ctx context.Context, c *redis.Client, key string, ttlMs int, opts ...any) (grant, error) {
	res, err := c.Do(ctx, append([]any{"LOCK", key, ttlMs}, opts...)...).Slice()
	if errors.Is(err, redis.Nil) {
		return grant{}, nil
	}
	if err != nil {
		return grant{}, err
	}
	if len(res) < 2 {
		return grant{}, fmt.Errorf("LOCK reply %v", res)
	}
	g := grant{ok: true}
	g.token, _ = res[0].(string)
	ms, _ := res[1].(int64)
	g.validity = time.Duration(ms) * time.Millisecond
	if len(res) > 2 {
		g.fence, _ = res[2].(int64)
	}
	return g, nil
}

func mustLock(t *testing.T, c *redis.Client, key string, ttlMs int, opts ...any) grant {
	t.Helper()
	g, err := lockCmd(ctxT(t, 10*time.Second), c, key, ttlMs, opts...)
	if err != nil || !g.ok {
		t.Fatalf("LOCK %s %d %v = %+v, %v; want the lock", key, ttlMs, opts, g, err)
	}
	return g
}

func mustNotLock(t *testing.T, c *redis.Client, who, key string, ttlMs int, opts ...any) {
	t.Helper()
	g, err := lockCmd(ctxT(t, 10*time.Second), c, key, ttlMs, opts...)
	if err != nil || g.ok {
		t.Fatalf("LOCK %s %v through %s = %+v, %v; want null (held)", key, opts, who, g, err)
	}
}

func unlock(t *testing.T, c *redis.Client, key, token string) int64 {
	t.Helper()
	n, err := c.Do(ctxT(t, 10*time.Second), "UNLOCK", key, token).Int64()
	if err != nil {
		t.Fatalf("UNLOCK %s: %v", key, err)
	}
	return n
}

// lockAsync sends LOCK in the background; the channel gets its reply.
func lockAsync(c *redis.Client, key string, ttlMs int, opts ...any) <-chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g, err := lockCmd(ctx, c, key, ttlMs, opts...)
		ch <- lockResult{g, err}
	}()
	return ch
}

type lockResult struct {
	grant
	err error
}

// marked counts the backends on which a waiter has marked key in db
// (redlockd:wait:{key}): a waiter does so in its second round, so once a
// majority is marked the waiter is in its pause and only a release notice
// or its WAIT's end can end it.
func marked(t *testing.T, servers []*redistest.Server, db int, key string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db, DisableIdentity: true})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		x, err := c.Exists(ctx, "redlockd:wait:{"+key+"}").Result()
		cancel()
		c.Close()
		if err == nil && x == 1 {
			n++
		}
	}
	return n
}

func waitMarked(t *testing.T, servers []*redistest.Server, db int, key string) {
	t.Helper()
	eventually(t, 10*time.Second, "the waiter marked "+key+" on every backend", func() bool {
		return marked(t, servers, db, key) == len(servers)
	})
}

// receive waits for a background LOCK's reply, well within its WAIT.
func receive(t *testing.T, ch <-chan lockResult, what string) lockResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(time.Minute):
		t.Fatalf("%s: no reply", what)
	}
	return lockResult{}
}

func TestFleetOfThreeProxies(t *testing.T) {
	servers := redistest.StartN(t, 3)
	f, procs := startFleet(t, servers, 3)
	t.Run("WAIT woken by a release through another proxy", func(t *testing.T) {
		for _, db := range []int{0, 5} {
			t.Run(fmt.Sprintf("db %d", db), func(t *testing.T) { fleetWake(t, f, servers, db) })
		}
	})
	t.Run("an expiry wakes no waiter on any proxy", func(t *testing.T) { fleetExpiryWakesNobody(t, f, servers) })
	t.Run("FENCE increases through every proxy", func(t *testing.T) { fleetFence(t, f) })
	t.Run("OWNER reenters through every proxy", func(t *testing.T) { fleetOwner(t, f) })
	t.Run("KEEPALIVE held through the fleet until its connection closes", func(t *testing.T) { fleetKeepalive(t, f, servers) })
	t.Run("contention over the fleet", func(t *testing.T) { fleetContention(t, f) })
	// The last two end proxy A, then leave a backend quarantined and
	// another one down.
	t.Run("draining a proxy releases its kept locks to the others", func(t *testing.T) { fleetDrain(t, f, procs[0], servers) })
	t.Run("a restarted backend sits out on every proxy", func(t *testing.T) { fleetRestart(t, f[1:], servers) })
}

// fleetWake: a lock held through A; waiters on B and C. A's UNLOCK wakes
// them (one gets it), and that one's UNLOCK through its own proxy wakes the
// other. Their retry tick (an hour) never comes within their WAIT.
func fleetWake(t *testing.T, f fleet, servers []*redistest.Server, db int) {
	key := fmt.Sprintf("fleet:wake:%d", db)
	a := fleetClient(t, f[0], db, 2)
	held := mustLock(t, a, key, 60000)
	answers := make(chan namedResult, 2)
	clients := map[string]*redis.Client{}
	for i, name := range []string{"B", "C"} {
		c := fleetClient(t, f[i+1], db, 3-i) // B speaks RESP3, C RESP2
		clients[name] = c
		rounds := startRounds(t, f[i+1])
		go func() {
			ch := lockAsync(c, key, 60000, "WAIT", 30000)
			answers <- namedResult{name, <-ch}
		}()
		rounds.waitPaused(t)
	}
	waitMarked(t, servers, db, key)
	if n := unlock(t, a, key, held.token); n != 1 {
		t.Fatalf("UNLOCK through A = %d, want 1", n)
	}
	first := receiveNamed(t, answers)
	if !first.ok {
		t.Fatalf("waiter on %s got null: the release through A woke nobody within its WAIT", first.name)
	}
	if n := unlock(t, clients[first.name], key, first.token); n != 1 {
		t.Fatalf("UNLOCK through %s = %d, want 1", first.name, n)
	}
	second := receiveNamed(t, answers)
	if !second.ok || second.token == first.token {
		t.Fatalf("waiter on %s = %+v: the release through %s did not wake it within its WAIT", second.name, second, first.name)
	}
	unlock(t, clients[second.name], key, second.token)
}

// namedResult is a waiter's reply and the proxy it waited on.
type namedResult struct {
	name string
	lockResult
}

func receiveNamed(t *testing.T, ch <-chan namedResult) namedResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiter on %s: %v", r.name, r.err)
		}
		return r
	case <-time.After(time.Minute):
		t.Fatal("no waiter answered")
	}
	return namedResult{}
}

// rounds counts a proxy's acquire rounds, as INFO locks shows them.
type rounds struct {
	c      *redis.Client
	before int64
}

func startRounds(t *testing.T, addr string) rounds {
	t.Helper()
	r := rounds{c: fleetClient(t, addr, 0, 2)}
	r.before = r.contended(t)
	return r
}

func (r rounds) contended(t *testing.T) int64 {
	t.Helper()
	info, err := r.c.Info(ctxT(t, 10*time.Second), "locks").Result()
	if err != nil {
		t.Fatalf("INFO locks: %v", err)
	}
	_, v, ok := strings.Cut(info, "quorum_acquire_contended:")
	if !ok {
		t.Fatalf("INFO locks has no quorum_acquire_contended: %q", info)
	}
	var n int64
	fmt.Sscan(strings.TrimSpace(strings.SplitN(v, "\n", 2)[0]), &n)
	return n
}

// waitPaused returns once the proxy ran a waiter's first two rounds (the
// plain one and the one that marks the key), both refused: the waiter is
// then in its pause, which only a wake or its WAIT's end can cut short.
func (r rounds) waitPaused(t *testing.T) {
	t.Helper()
	eventually(t, 10*time.Second, "the waiter's first two rounds", func() bool { return r.contended(t) >= r.before+2 })
}

// fleetExpiryWakesNobody is the control of fleetWake: a lock that expires
// instead of being released announces nothing, and with the fleet's retry
// delay a waiter then gets null at the end of its WAIT although the key
// has been free for most of it. A grant in fleetWake is a wake.
//
// The hold outlives any start-up delay; once the waiter is in its pause
// (its proxy counted both refused rounds), the key is made to expire on
// every backend directly, which is what an expiry is: Redis drops the key
// and nothing runs a release. The WAIT is far longer than the steps before
// the expiry, so its null reply comes after the key was free.
func fleetExpiryWakesNobody(t *testing.T, f fleet, servers []*redistest.Server) {
	const key = "fleet:expiry"
	held := mustLock(t, fleetClient(t, f[0], 0, 2), key, 60000)
	rounds := startRounds(t, f[2])
	w := lockAsync(fleetClient(t, f[2], 0, 2), key, 60000, "WAIT", 15000)
	rounds.waitPaused(t)
	for _, s := range servers {
		if err := s.Client().PExpire(ctxT(t, 10*time.Second), key, time.Millisecond).Err(); err != nil {
			t.Fatalf("PEXPIRE on %s: %v", s.Addr(), err)
		}
	}
	eventually(t, 10*time.Second, "the held lock expired on every backend", func() bool {
		for _, s := range servers {
			v, err := s.Client().Get(ctxT(t, 10*time.Second), key).Result()
			if v == held.token || (err != nil && !errors.Is(err, redis.Nil)) {
				return false
			}
		}
		return true
	})
	select {
	case r := <-w:
		t.Fatalf("the waiter answered (%+v, %v) as soon as the lock expired, long before its 15s WAIT could end", r.grant, r.err)
	default:
	}
	if r := receive(t, w, "waiter behind an expired lock"); r.ok {
		t.Fatalf("waiter on C got the lock (%+v) although nothing released it: the expiry woke it, or its retry tick came within its WAIT", r)
	}
}

// fleetFence: fencing tokens of one key, taken through A, B and C in turn
// and then by waiters on all three at once, strictly increase in the order
// the grants were made.
func fleetFence(t *testing.T, f fleet) {
	var seq []int64
	for i := range 3 * len(f) {
		c := fleetClient(t, f[i%len(f)], 0, 2)
		g := mustLock(t, c, "fleet:fence", 10000, "FENCE")
		seq = append(seq, g.fence)
		unlock(t, c, "fleet:fence", g.token)
	}
	assertIncreasing(t, "in turn", seq)
	grants, sections := fenceContention(t, f, 2, 4)
	seq = seq[:0]
	per := map[int]int{}
	for _, g := range grants {
		seq = append(seq, g.fence)
		per[g.proxy]++
	}
	assertIncreasing(t, "under contention", seq)
	if len(per) != len(f) {
		t.Fatalf("grants per proxy %v: want grants through all %d", per, len(f))
	}
	if o := check.Overlaps(sections); len(o) > 0 {
		t.Fatalf("FENCE holders overlapped: %v", o[0])
	}
}

func assertIncreasing(t *testing.T, what string, seq []int64) {
	t.Helper()
	if len(seq) < 2 {
		t.Fatalf("%s: %d fencing tokens, want several", what, len(seq))
	}
	for i := 1; i < len(seq); i++ {
		if seq[i] <= seq[i-1] {
			t.Fatalf("%s: fencing token %d after %d (grant %d of %v)", what, seq[i], seq[i-1], i, seq)
		}
	}
}

type fenceGrant struct {
	proxy int
	fence int64
}

// fenceContention runs perProxy waiters on each proxy, each taking the
// key rounds times with LOCK … WAIT … FENCE. A holder appends its fencing
// token while it holds the lock, so the list is in grant order.
func fenceContention(t *testing.T, f fleet, perProxy, rounds int) ([]fenceGrant, []check.Section) {
	t.Helper()
	rec := check.NewRecorder()
	var mu sync.Mutex
	var grants []fenceGrant
	var wg sync.WaitGroup
	stop := time.Now().Add(30 * time.Second)
	errs := make(chan error, perProxy*len(f))
	for i := range perProxy * len(f) {
		c := fleetClient(t, f[i%len(f)], 0, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < rounds; {
				if time.Now().After(stop) {
					errs <- fmt.Errorf("client %d: %d of %d grants before the deadline", i, got, rounds)
					return
				}
				t0 := time.Now()
				g, err := lockCmd(context.Background(), c, "fleet:fence:many", 10000, "WAIT", 5000, "FENCE")
				if err != nil {
					errs <- fmt.Errorf("client %d: LOCK: %v", i, err)
					return
				}
				if !g.ok {
					continue // the WAIT ran out: wait again until the deadline
				}
				h := rec.Begin(fmt.Sprintf("c%d@%d", i, i%len(f)), "fleet:fence:many", t0, time.Now(), g.validity)
				mu.Lock()
				grants = append(grants, fenceGrant{i % len(f), g.fence})
				mu.Unlock()
				h.End()
				c.Do(context.Background(), "UNLOCK", "fleet:fence:many", g.token)
				got++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return grants, rec.Sections()
}

// fleetOwner: one owner enters a lock through A, B and C (in db 3, with a
// RESP3 client on B), and twice more in one pipelined batch through C;
// each proxy's LOCKINFO shows the same token and hold count; another owner
// gets null everywhere until the fifth UNLOCK.
func fleetOwner(t *testing.T, f fleet) {
	const key = "fleet:owner"
	cs := []*redis.Client{fleetClient(t, f[0], 3, 2), fleetClient(t, f[1], 3, 3), fleetClient(t, f[2], 3, 2)}
	names := []string{"A", "B", "C"}
	var token string
	for i, c := range cs {
		g := mustLock(t, c, key, 30000, "OWNER", "alice")
		if i > 0 && g.token != token {
			t.Fatalf("reentry through %s: token %q, want the first hold's %q", names[i], g.token, token)
		}
		token = g.token
	}
	pipelineReentry(t, cs[2], key, token)
	const entered = 5
	for holds := int64(entered); holds > 0; holds-- {
		for i, c := range cs {
			info := lockInfo(t, c, key)
			if info["verdict"] != "held" || info["token"] != token || info["holds"] != holds {
				t.Fatalf("LOCKINFO through %s = verdict %v token %v holds %v; want held by %s, %d holds",
					names[i], info["verdict"], info["token"], info["holds"], token, holds)
			}
			mustNotLock(t, c, names[i], key, 30000, "OWNER", "bob")
		}
		at := int(entered-holds) % len(cs) // drop the holds through A, B, C, A, B
		if n := unlock(t, cs[at], key, token); n != 1 {
			t.Fatalf("UNLOCK through %s with %d holds = %d, want 1", names[at], holds, n)
		}
	}
	for i, c := range cs {
		if info := lockInfo(t, c, key); info["verdict"] != "not held" {
			t.Fatalf("LOCKINFO through %s after the last UNLOCK: verdict %v, want not held", names[i], info["verdict"])
		}
	}
	g := mustLock(t, cs[1], key, 30000, "OWNER", "bob")
	unlock(t, cs[1], key, g.token)
}

// pipelineReentry sends two LOCK … OWNER alice in one batch through c;
// both must reenter with token.
func pipelineReentry(t *testing.T, c *redis.Client, key, token string) {
	t.Helper()
	cmds, err := c.Pipelined(ctxT(t, 10*time.Second), func(p redis.Pipeliner) error {
		p.Do(context.Background(), "LOCK", key, 30000, "OWNER", "alice")
		p.Do(context.Background(), "LOCK", key, 30000, "OWNER", "alice")
		return nil
	})
	if err != nil {
		t.Fatalf("pipelined reentry: %v", err)
	}
	for i, cmd := range cmds {
		res, err := cmd.(*redis.Cmd).Slice()
		if err != nil || len(res) != 2 || res[0] != token {
			t.Fatalf("pipelined reentry %d = %v, %v; want the token %s", i, res, err, token)
		}
	}
}

// lockInfo reads LOCKINFO's top-level fields, from a RESP2 flat array or
// a RESP3 map.
func lockInfo(t *testing.T, c *redis.Client, key string) map[string]any {
	t.Helper()
	v, err := c.Do(ctxT(t, 10*time.Second), "LOCKINFO", key).Result()
	if err != nil {
		t.Fatalf("LOCKINFO %s: %v", key, err)
	}
	out := map[string]any{}
	switch x := v.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = x[i+1]
		}
	case map[any]any:
		for k, v := range x {
			out[fmt.Sprint(k)] = v
		}
	default:
		t.Fatalf("LOCKINFO reply %T", v)
	}
	return out
}

// fleetKeepalive: a KEEPALIVE lock taken through A outlives its ttl while
// A's client stays connected, held as B and C see it; closing that client
// releases it, which wakes a waiter on C (an expiry would not: see
// fleetExpiryWakesNobody).
func fleetKeepalive(t *testing.T, f fleet, servers []*redistest.Server) {
	const key, ttl = "fleet:kept", 1500 * time.Millisecond
	holder := fleetClient(t, f[0], 0, 2)
	kept := mustLock(t, holder, key, int(ttl.Milliseconds()), "KEEPALIVE")
	taken := time.Now()
	b, c := fleetClient(t, f[1], 0, 3), fleetClient(t, f[2], 0, 2)
	w := lockAsync(fleetClient(t, f[2], 0, 2), key, 30000, "WAIT", 30000)
	waitMarked(t, servers, 0, key)
	for time.Since(taken) < 2*ttl {
		for name, r := range map[string]*redis.Client{"B": b, "C": c} {
			if v, err := r.Get(ctxT(t, 10*time.Second), key).Result(); err != nil || v != kept.token {
				t.Fatalf("GET through %s %v after a KEEPALIVE LOCK of ttl %v = %q, %v; want its token",
					name, time.Since(taken).Round(time.Millisecond), ttl, v, err)
			}
		}
		select {
		case r := <-w:
			t.Fatalf("waiter on C answered %+v while the kept lock was held", r)
		default:
		}
		time.Sleep(50 * time.Millisecond) // pacing the checks
	}
	holder.Close()
	r := receive(t, w, "waiter on C after the holder's connection closed")
	if !r.ok {
		t.Fatal("waiter on C got null: closing the holder's connection released nothing within its WAIT")
	}
	if v, err := b.Get(ctxT(t, 10*time.Second), key).Result(); err != nil || v != r.token {
		t.Fatalf("GET through B = %q, %v; want the waiter's token", v, err)
	}
}

// fleetContention: clients spread over the three proxies loop on a few
// keys, half with plain LOCK, half with LOCK … WAIT … FENCE; the history
// checker finds no overlap, every proxy granted, and each key's fencing
// tokens rise in the order its sections began.
func fleetContention(t *testing.T, f fleet) {
	rec := check.NewRecorder()
	var mu sync.Mutex
	fences := map[string][]fencedSection{}
	stop := time.Now().Add(max(runFor(), 2*time.Second))
	var wg sync.WaitGroup
	for i := range 12 {
		c := fleetClient(t, f[i%len(f)], 0, 2)
		opts := []any{}
		if i%2 == 1 {
			opts = []any{"WAIT", 1000, "FENCE"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleetLoop(c, rec, fmt.Sprintf("c%d@%d", i, i%len(f)), i, stop, opts, func(key string, s fencedSection) {
				mu.Lock()
				fences[key] = append(fences[key], s)
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	res := rec.Check()
	report(t, res)
	per := map[string]int{}
	for _, s := range rec.Sections() {
		_, p, _ := strings.Cut(s.Client, "@")
		per[p]++
	}
	if len(per) != len(f) {
		t.Fatalf("sections per proxy %v: want sections through all %d", per, len(f))
	}
	if len(fences) != fleetKeys {
		t.Fatalf("fenced sections on %d keys, want all %d", len(fences), fleetKeys)
	}
	fenced := 0
	for key, ss := range fences {
		checkFenceOrder(t, key, ss)
		fenced += len(ss)
	}
	t.Logf("sections per proxy %v, %d of them fenced", per, fenced)
}

type fencedSection struct {
	start time.Time
	fence int64
}

func checkFenceOrder(t *testing.T, key string, ss []fencedSection) {
	t.Helper()
	sorted := append([]fencedSection(nil), ss...)
	for i := 1; i < len(sorted); i++ { // insertion sort by start: a few dozen
		for j := i; j > 0 && sorted[j].start.Before(sorted[j-1].start); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i].fence <= sorted[i-1].fence {
			t.Fatalf("key %s: fencing token %d granted after %d", key, sorted[i].fence, sorted[i-1].fence)
		}
	}
}

const fleetKeys = 3

// fleetLoop is one client: LOCK → read-modify-write of the key's counter
// → UNLOCK, until stop; fenced reports each fenced section.
func fleetLoop(c *redis.Client, rec *check.Recorder, name string, seed int, stop time.Time, opts []any, fenced func(string, fencedSection)) {
	ctx := context.Background()
	for n := seed; time.Now().Before(stop); n++ {
		key := fmt.Sprintf("fleet:lock:%d", n%fleetKeys)
		t0 := time.Now()
		g, err := lockCmd(ctx, c, key, int(lockTTL.Milliseconds()), opts...)
		got := time.Now()
		rec.Attempt(t0, got, err == nil && g.ok, errClassRESP(err, g.ok))
		if err != nil || !g.ok {
			continue
		}
		h := rec.Begin(name, key, t0, got, g.validity)
		h.Increment(50 * time.Microsecond)
		if g.fence != 0 {
			fenced(key, fencedSection{got, g.fence})
		}
		h.End()
		c.Do(ctx, "UNLOCK", key, g.token)
	}
}

// fleetDrain: SIGTERM to proxy A (a drain) releases the KEEPALIVE lock
// taken through it at once, which wakes a waiter on C. The lock's ttl
// (60s) outlasts the waiter's WAIT (30s) and its retry tick never comes,
// so only the release can have granted it.
func fleetDrain(t *testing.T, f fleet, a *redlocktest.Process, servers []*redistest.Server) {
	const key = "fleet:drained"
	mustLock(t, fleetClient(t, f[0], 0, 2), key, 60000, "KEEPALIVE")
	w := lockAsync(fleetClient(t, f[2], 0, 2), key, 60000, "WAIT", 30000)
	waitMarked(t, servers, 0, key)
	a.Signal(t, syscall.SIGTERM)
	r := receive(t, w, "waiter on C while A drained")
	if !r.ok {
		t.Fatal("waiter on C got null: draining A released nothing within its WAIT")
	}
	if v, err := fleetClient(t, f[1], 0, 2).Get(ctxT(t, 10*time.Second), key).Result(); err != nil || v != r.token {
		t.Fatalf("GET through B = %q, %v; want the waiter's token", v, err)
	}
}

// fleetRestart: every proxy looks at every backend itself, so a backend
// restart (without data) quarantines it on every proxy of f. The other
// two still grant through each proxy, fencing tokens still rise, and with
// one of them killed too no proxy grants on the quarantined backend's vote.
func fleetRestart(t *testing.T, f fleet, servers []*redistest.Server) {
	const key = "fleet:restart"
	cs := make([]*redis.Client, len(f))
	for i, addr := range f {
		cs[i] = fleetClient(t, addr, 0, 2)
	}
	before := mustLock(t, cs[0], key, 5000, "FENCE")
	unlock(t, cs[0], key, before.token)
	servers[0].Restart(t)
	want := "backend0:addr=" + servers[0].Addr() + ",state=quarantined,"
	for i, c := range cs {
		eventually(t, 15*time.Second, fmt.Sprintf("proxy %d shows backend0 quarantined", i), func() bool {
			info, err := c.Info(ctxT(t, 10*time.Second), "backends").Result()
			return err == nil && strings.Contains(info, want)
		})
	}
	seq := []int64{before.fence}
	for _, c := range cs {
		g := mustLock(t, c, key, 5000, "FENCE")
		seq = append(seq, g.fence)
		unlock(t, c, key, g.token)
	}
	assertIncreasing(t, "across a backend restart", seq)
	servers[1].Kill()
	for i, c := range cs {
		g, err := lockCmd(ctxT(t, 10*time.Second), c, key, 5000)
		if g.ok || err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
			t.Fatalf("LOCK through proxy %d with backend0 quarantined and backend1 down = %+v, %v; want NOQUORUM", i, g, err)
		}
	}
}
