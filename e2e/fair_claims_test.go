package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestFairGiveUpAnnouncesFreeKey: a fair waiter whose wait runs out while
// the key is free (the holder's ttl ran out, so nothing reserved it and
// nothing was announced) leaves the queue, and the backends announce the
// key free: the waiter behind it, on another proxy whose retries are too
// slow to serve it in time, is woken and takes the lock at once.
func TestFairGiveUpAnnouncesFreeKey(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{Quorum: slowRetries})
	const key = "fair:giveup"
	holder := px[0].Client(t, 2)
	lock(t, holder, key, 1000)
	first := lockAsync(waiterClient(t, px[0]), key, 60000, "WAIT", 3000, "FAIR", "TOKEN", "first")
	waitQueued(t, backends, key, "first")
	next := lockAsync(waiterClient(t, px[1]), key, 60000, "WAIT", 30000, "FAIR", "TOKEN", "next")
	waitQueued(t, backends, key, "first", "next")
	pollFor(t, "the holder's lock expired on every backend", func() bool {
		for _, s := range backends {
			if s.Client().Exists(ctxT(t), key).Val() != 0 {
				return false
			}
		}
		return true
	})
	select {
	case r := <-first:
		t.Fatalf("the first waiter returned before its wait ran out: %v, %v", r.res, r.err)
	case r := <-next:
		t.Fatalf("the second waiter returned while the first was queued: %v, %v", r.res, r.err)
	default:
	}
	var gaveUp lockReply
	select {
	case gaveUp = <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("the first waiter's WAIT 3000 never ran out")
	}
	if gaveUp.err != redis.Nil {
		t.Fatalf("first waiter = %v, %v; want null (its retry jitter is %v, longer than its wait)", gaveUp.res, gaveUp.err, slowJitter)
	}
	var r lockReply
	select {
	case r = <-next:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter behind the one that gave up was never served")
	}
	if r.err != nil || len(r.res) != 2 || r.res[0] != "next" {
		t.Fatalf("second waiter = %v, %v; want the lock", r.res, r.err)
	}
	if d := r.at.Sub(gaveUp.at); d > wakeBound {
		t.Errorf("the second waiter got the lock %v after the first gave up; its retry jitter is %v, so the freed key was not announced", d, slowJitter)
	}
	waitQueued(t, backends, key)
}

// TestFairReservedKeyReadsHeld: a key its holder UNLOCKed while a waiter
// is queued is reserved for the queue, and every proxy shows it held: GET
// answers a token that starts with redlockd:queued:, EXISTS answers 1,
// LOCK … OWNER gets null, and the old holder's DELIFEQ does not free it.
func TestFairReservedKeyReadsHeld(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key = "fair:reserved"
	c := px[0].Client(t, 2)
	htok, _ := lock(t, c, key, 60000)
	queueEntry(t, backends, key, "queued", 1, time.Minute) // a waiter that takes no turn
	if n, err := c.Do(ctxT(t), "UNLOCK", key, htok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	for i, in := range px {
		pc := in.Client(t, 2)
		v, err := pc.Do(ctxT(t), "GET", key).Text()
		if err != nil || !strings.HasPrefix(v, "redlockd:queued:") {
			t.Errorf("proxy %d: GET of the reserved key = %q, %v; want a redlockd:queued: token", i, v, err)
		}
		if n, err := pc.Do(ctxT(t), "EXISTS", key).Int(); err != nil || n != 1 {
			t.Errorf("proxy %d: EXISTS of the reserved key = %v, %v; want 1", i, n, err)
		}
		if v, err := pc.Do(ctxT(t), "LOCK", key, 10000, "OWNER", "o"+string(rune('0'+i))).Result(); err != redis.Nil {
			t.Errorf("proxy %d: LOCK … OWNER of the reserved key = %v, %v; want null", i, v, err)
		}
	}
	if n, err := c.Do(ctxT(t), "DELIFEQ", key, htok).Int(); err != nil || n != 0 {
		t.Errorf("DELIFEQ of the old holder's token = %v, %v; want 0", n, err)
	}
	if !reservedOnAll(t, backends, key) {
		t.Error("the old holder's DELIFEQ freed the reserved key on a backend")
	}
	for i, in := range px {
		pc := in.Client(t, 2)
		if v, err := pc.Do(ctxT(t), "GET", key).Text(); err != nil || !strings.HasPrefix(v, "redlockd:queued:") {
			t.Errorf("proxy %d: GET after the old holder's DELIFEQ = %q, %v; want the reservation still", i, v, err)
		}
		if n, err := pc.Do(ctxT(t), "EXISTS", key).Int(); err != nil || n != 1 {
			t.Errorf("proxy %d: EXISTS after the old holder's DELIFEQ = %v, %v; want 1", i, n, err)
		}
	}
	waitQueued(t, backends, key, "queued")
}

// TestFairReservedKeyForcedWrites: a key reserved for the queue reads as
// held through PTTL and LOCKINFO (a redlockd:queued: token), a forced SET
// overrides the reservation, and so does a DEL: a plain try-lock then
// succeeds.
func TestFairReservedKeyForcedWrites(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key = "fair:forced"
	c := px[0].Client(t, 2)
	htok, _ := lock(t, c, key, 60000)
	queueEntry(t, backends, key, "queued", 1, time.Minute) // a waiter that takes no turn
	if n, err := c.Do(ctxT(t), "UNLOCK", key, htok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	if !reservedOnAll(t, backends, key) {
		t.Fatal("the UNLOCK did not reserve the key for the queue")
	}
	for i, in := range px {
		pc := in.Client(t, 2)
		if p, err := pc.PTTL(ctxT(t), key).Result(); err != nil || p <= 0 || p > time.Minute {
			t.Errorf("proxy %d: PTTL of the reserved key = %v, %v; want the queue's ttl left", i, p, err)
		}
		info, err := pc.Do(ctxT(t), "LOCKINFO", key).Slice()
		if err != nil {
			t.Fatalf("proxy %d: LOCKINFO = %v", i, err)
		}
		if tok, _ := lockInfoField(info, "token").(string); !strings.HasPrefix(tok, "redlockd:queued:") {
			t.Errorf("proxy %d: LOCKINFO token of the reserved key = %#v; want a redlockd:queued: token (%v)", i, lockInfoField(info, "token"), info)
		}
	}
	if err := px[1].Client(t, 2).Set(ctxT(t), key, "forced", time.Minute).Err(); err != nil {
		t.Fatalf("forced SET of the reserved key: %v", err)
	}
	if vals := redlocktest.ValuesIn(t, backends, 0, key); redlocktest.Count(vals, "forced") != 3 {
		t.Fatalf("after the forced SET the key holds %v on the backends, want forced everywhere", vals)
	}
	if n, err := c.Del(ctxT(t), key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL of the key = %v, %v", n, err)
	}
	tok, _ := lock(t, c, key, 10000) // the key is free: a plain try-lock takes it
	if n, err := c.Do(ctxT(t), "UNLOCK", key, tok).Int(); err != nil || n != 1 || !reservedOnAll(t, backends, key) {
		t.Fatalf("UNLOCK = %v, %v; want 1 and the key reserved again", n, err)
	}
	if n, err := px[1].Client(t, 2).Del(ctxT(t), key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL of the reserved key = %v, %v", n, err)
	}
	if v, err := c.Do(ctxT(t), "LOCK", key, 10000).Result(); err != nil {
		t.Fatalf("plain try-lock after the DEL of the reservation = %v, %v; want the lock", v, err)
	}
	waitQueued(t, backends, key, "queued")
}
