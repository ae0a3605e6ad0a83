package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// The OWNER race: four connections of one owner send LOCK … OWNER at the
// same moment, every other round against two connections of a second
// owner; while the winner holds the lock two connections of each owner
// send LOCK again; then every grant is unlocked once.
const (
	raceRounds   = 300
	raceSame     = 4 // connections of owner "same"
	raceOther    = 2 // connections of owner "other", in odd rounds
	raceTTL      = 5000
	raceKey      = "race"
	raceDeadline = 60 * time.Second
)

// quickRetries shortens the pause between rounds, so that several hundred
// race rounds run in a few seconds.
func quickRetries(c *quorum.Config) {
	c.RetryDelayMin, c.RetryDelayMax = time.Millisecond, 5*time.Millisecond
}

func TestOwnerRaceOneProxy(t *testing.T) { ownerRace(t, raceConfig{proxies: 1, rounds: raceRounds}) }

func TestOwnerRaceTwoProxies(t *testing.T) { ownerRace(t, raceConfig{proxies: 2, rounds: raceRounds}) }

// TestOwnerRaceStalledBackend runs the race with one backend SIGSTOPped
// for every fourth round: rounds, undos and UNLOCKs that time out there
// run late, when it resumes, and must still leave no hold behind and
// never two owners granted. With a short node timeout on a busy machine a
// backend may time out in any round, so a null or NOQUORUM is an answer.
func TestOwnerRaceStalledBackend(t *testing.T) {
	ownerRace(t, raceConfig{proxies: 2, rounds: 16, stallEvery: 4, nodeTimeout: 200 * time.Millisecond})
}

// raceConfig shapes one run of the OWNER race.
type raceConfig struct {
	proxies, rounds int
	// stallEvery > 0: every stallEvery-th round runs with one backend
	// stopped (each time the next one), resumed before the check; a LOCK
	// may then answer null or NOQUORUM in any round.
	stallEvery  int
	nodeTimeout time.Duration
}

// strict: no backend fault in the run, so an owner's LOCK must not answer
// null or an error.
func (c raceConfig) strict() bool { return c.stallEvery == 0 }

// racer is one connection of an owner.
type racer struct {
	owner string
	c     *redis.Client
}

// raceGrant is one LOCK of a round and its reply.
type raceGrant struct {
	r     *racer
	token string // "" when the reply was null or an error
	err   error
	at    time.Time
}

// race is one run: its racers, backends and configuration.
type race struct {
	t       *testing.T
	ctx     context.Context
	cfg     raceConfig
	racers  []*racer
	servers []*redistest.Server
}

func ownerRace(t *testing.T, cfg raceConfig) {
	servers := redistest.StartN(t, 3)
	var ins []*redlocktest.Instance
	for range cfg.proxies {
		opts := redlocktest.Options{NodeTimeout: cfg.nodeTimeout, Quorum: func(c *quorum.Config) {
			quickRetries(c)
			c.ReleaseRetry = 20 * time.Millisecond
		}}
		ins = append(ins, redlocktest.StartOver(t, servers, opts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), raceDeadline)
	defer cancel()
	r := &race{t: t, ctx: ctx, cfg: cfg, servers: servers}
	for i := range raceSame + raceOther {
		owner := "same"
		if i >= raceSame {
			owner = "other"
		}
		c := redis.NewClient(&redis.Options{Addr: ins[i%cfg.proxies].Addr, Protocol: 2, PoolSize: 1})
		t.Cleanup(func() { c.Close() })
		r.racers = append(r.racers, &racer{owner, c})
	}
	var sections []check.Section
	for round := range cfg.rounds {
		sections = append(sections, r.round(round)...)
		if t.Failed() {
			return
		}
	}
	if ov := check.Overlaps(sections); len(ov) != 0 {
		t.Fatalf("%d overlaps between owners, first: %v", len(ov), ov[0])
	}
}

// stalled is the backend stopped during round, or nil.
func (r *race) stalled(round int) *redistest.Server {
	if r.cfg.stallEvery <= 0 || round%r.cfg.stallEvery != r.cfg.stallEvery-1 {
		return nil
	}
	return r.servers[(round/r.cfg.stallEvery)%len(r.servers)]
}

// round plays one round and returns each granted owner's critical
// section: from its first grant to its last UNLOCK.
func (r *race) round(round int) []check.Section {
	t := r.t
	in := r.racers[:raceSame]
	if round%2 == 1 {
		in = r.racers
	}
	stalled := r.stalled(round)
	if stalled != nil {
		stalled.Stop()
		t.Cleanup(stalled.Cont) // in case the round fails before it resumes
	}
	first := lockAll(r.ctx, in)
	r.checkReplies(round, first)
	holder := roundHolder(t, round, first)
	if round%2 == 0 && r.cfg.strict() {
		for _, g := range first {
			if g.token == "" {
				t.Errorf("round %d: LOCK … OWNER %s answered null with no other owner in the race", round, g.r.owner)
			}
		}
	}
	// While holder holds the lock, its LOCKs must succeed, the others' not.
	again := lockAll(r.ctx, []*racer{in[0], in[1], in[len(in)-2], in[len(in)-1]})
	r.checkReplies(round, again)
	for _, g := range again {
		switch {
		case holder == "" || g.r.owner != holder:
			if g.token != "" && holder != "" {
				t.Errorf("round %d: %s was granted while %s held the lock", round, g.r.owner, holder)
			}
		case g.token == "" && !r.cfg.strict():
			// a timeout: not a grant
		case g.token != first[holderIndex(first, holder)].token:
			t.Errorf("round %d: %s's LOCK while it held the lock answered %q", round, holder, g.token)
		}
	}
	grants := append(first, again...)
	end := unlockAll(t, r.ctx, round, grants)
	if stalled != nil {
		stalled.Cont()
	}
	waitFree(t, r.ctx, round, r.servers)
	return sectionsOf(round, grants, end)
}

// checkReplies fails the round on an error reply in a strict run.
func (r *race) checkReplies(round int, gs []raceGrant) {
	for _, g := range gs {
		if g.err != nil && r.cfg.strict() {
			r.t.Errorf("round %d: LOCK … OWNER %s: %v", round, g.r.owner, g.err)
		}
	}
}

// lockAll sends LOCK … OWNER through every racer at the same moment.
func lockAll(ctx context.Context, rs []*racer) []raceGrant {
	out := make([]raceGrant, len(rs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			<-start
			res, err := r.c.Do(ctx, "LOCK", raceKey, raceTTL, "OWNER", r.owner).Slice()
			g := raceGrant{r: r, at: time.Now()}
			switch {
			case err == nil && len(res) == 2:
				g.token, _ = res[0].(string)
			case !errors.Is(err, redis.Nil):
				g.err = fmt.Errorf("reply %v, %w", res, err)
			}
			out[i] = g
		})
	}
	close(start)
	wg.Wait()
	return out
}

// roundHolder is the one owner granted in the first wave ("" if none),
// all of whose grants must carry one token.
func roundHolder(t *testing.T, round int, gs []raceGrant) string {
	t.Helper()
	tokens := map[string]string{}
	for _, g := range gs {
		if g.token == "" {
			continue
		}
		if prev, ok := tokens[g.r.owner]; ok && prev != g.token {
			t.Errorf("round %d: owner %s granted two tokens: %q and %q", round, g.r.owner, prev, g.token)
		}
		tokens[g.r.owner] = g.token
	}
	if len(tokens) > 1 {
		t.Errorf("round %d: both owners granted: %v", round, tokens)
	}
	for owner := range tokens {
		return owner
	}
	return ""
}

func holderIndex(gs []raceGrant, owner string) int {
	for i, g := range gs {
		if g.r.owner == owner && g.token != "" {
			return i
		}
	}
	return -1
}

// unlockAll unlocks every grant once, all at once. An UNLOCK may answer 0:
// when the other holders' UNLOCKs have freed the lock on a majority first,
// the last copies are released for all of them. It returns, once every
// UNLOCK was answered, the time the last one was sent.
func unlockAll(t *testing.T, ctx context.Context, round int, gs []raceGrant) time.Time {
	t.Helper()
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	for _, g := range gs {
		if g.token == "" {
			continue
		}
		wg.Go(func() {
			mu.Lock()
			last = time.Now()
			mu.Unlock()
			if n, err := g.r.c.Do(ctx, "UNLOCK", raceKey, g.token).Int(); err != nil || (n != 0 && n != 1) {
				t.Errorf("round %d: %s's UNLOCK = %d, %v", round, g.r.owner, n, err)
			}
		})
	}
	wg.Wait()
	return last
}

// waitFree checks that, every grant unlocked, the lock stays on no backend
// (a release or undo that did not reach a backend at once is retried; that
// is given a moment, well within the ttl), and no backend counts a hold
// for it. A hold count left beside no lock counts for nothing: it is bound
// to a token that is gone.
func waitFree(t *testing.T, ctx context.Context, round int, servers []*redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := leftOnBackends(ctx, servers)
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("round %d: every grant was unlocked, but the backends still store %s", round, left)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func leftOnBackends(ctx context.Context, servers []*redistest.Server) string {
	for i, s := range servers {
		v, err := s.Client().Get(ctx, raceKey).Result()
		if !errors.Is(err, redis.Nil) {
			h, _ := s.Client().Get(ctx, quorum.HoldsKey(raceKey)).Result()
			return fmt.Sprintf("%q (holds %q, err %v) on backend %d", v, h, err, i)
		}
	}
	return ""
}

// sectionsOf is each granted owner's critical section in the round: from
// its first grant until its last UNLOCK was sent.
func sectionsOf(round int, gs []raceGrant, end time.Time) []check.Section {
	start := map[string]time.Time{}
	for _, g := range gs {
		if g.token == "" {
			continue
		}
		if s, ok := start[g.r.owner]; !ok || g.at.Before(s) {
			start[g.r.owner] = g.at
		}
	}
	var out []check.Section
	for owner, s := range start {
		out = append(out, check.Section{Key: raceKey, Client: fmt.Sprintf("%s/%d", owner, round), Start: s, End: end})
	}
	return out
}

// TestLockInfoOwnerWithSpace: an owner id with a space counts its holds
// like any other, in LOCKINFO through either proxy and on every backend.
func TestLockInfoOwnerWithSpace(t *testing.T) {
	servers := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, servers, redlocktest.Options{})
	a, b := first.Client(t, 3), redlocktest.StartOver(t, servers, redlocktest.Options{}).Client(t, 3)
	var tok string
	for i, c := range []*redis.Client{a, b, a} {
		got, _ := lock(t, c, "sp", 10000, "OWNER", "a b")
		if i > 0 && got != tok {
			t.Fatalf("LOCK #%d token %q, want %q", i, got, tok)
		}
		tok = got
	}
	for _, c := range []*redis.Client{a, b} {
		holds, perBackend := lockInfoHolds(t, c, "sp")
		if holds != int64(3) {
			t.Fatalf("LOCKINFO holds = %v, want 3", holds)
		}
		for i, h := range perBackend {
			if h != int64(3) {
				t.Fatalf("LOCKINFO holds on backend %d = %v, want 3", i, h)
			}
		}
	}
	for i := range 3 {
		if n, err := b.Do(ctxT(t), "UNLOCK", "sp", tok).Int(); err != nil || n != 1 {
			t.Fatalf("UNLOCK #%d = %d, %v", i, n, err)
		}
	}
	if vals := first.BackendValues(t, "sp"); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("after three UNLOCKs the backends store %v", vals)
	}
}

// lockInfoHolds is LOCKINFO's agreed hold count and each backend's.
func lockInfoHolds(t *testing.T, c *redis.Client, key string) (any, []any) {
	t.Helper()
	res, err := c.Do(ctxT(t), "LOCKINFO", key).Result()
	m, ok := res.(map[any]any)
	if err != nil || !ok {
		t.Fatalf("LOCKINFO = %#v, %v", res, err)
	}
	bs, _ := m["backends"].([]any)
	var per []any
	for _, b := range bs {
		bm, _ := b.(map[any]any)
		per = append(per, bm["holds"])
	}
	if len(per) != 3 {
		t.Fatalf("LOCKINFO backends = %#v", m["backends"])
	}
	return m["holds"], per
}

// TestOwnerWait: LOCK … WAIT … OWNER waits for another owner's lock to go
// and then takes it, and takes one more hold at once when its owner holds
// the lock.
func TestOwnerWait(t *testing.T) {
	servers := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, servers, redlocktest.Options{})
	second := redlocktest.StartOver(t, servers, redlocktest.Options{Quorum: quickRetries})
	a, b := first.Client(t, 2), second.Client(t, 2)
	vTok, _ := lock(t, a, "ow", 10000, "OWNER", "v")
	got := make(chan lockReply, 1)
	ctx := ctxT(t)
	go func() {
		res, err := b.Do(ctx, "LOCK", "ow", 10000, "WAIT", 10000, "OWNER", "w").Slice()
		got <- lockReply{res, err, time.Now()}
	}()
	pollFor(t, "w waiting", func() bool { return second.Cluster.Waiters("ow") == 1 })
	if n, err := a.Do(ctxT(t), "UNLOCK", "ow", vTok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %d, %v", n, err)
	}
	r := <-got
	if r.err != nil || len(r.res) != 2 {
		t.Fatalf("LOCK … WAIT … OWNER w after v's UNLOCK = %v, %v", r.res, r.err)
	}
	wTok, _ := r.res[0].(string)
	if again, _ := lock(t, a, "ow", 10000, "WAIT", 10000, "OWNER", "w"); again != wTok {
		t.Fatalf("w's LOCK … WAIT while w holds = %q, want %q", again, wTok)
	}
	if holds, _ := lockInfoHolds(t, first.Client(t, 3), "ow"); holds != int64(2) {
		t.Fatalf("LOCKINFO holds = %v, want 2", holds)
	}
}
