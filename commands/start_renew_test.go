package commands

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// RENEW and the recognised extend scripts (go-redsync's touch and
// redis-py's extend here) have an asynchronous form: Start renews a held lock (RENEW answers its
// validity, the script 1, and the key's ttl is the new one), answers a
// lock held by another token with null or 0, renews an OWNER lock by
// its token, and answers a malformed ttl with Run's error; redis-py's
// extend adds to the ttl or replaces it. A lock this proxy keeps
// (KEEPALIVE), a script of another shape, a script that is not an extend
// and redis-py's add to an OWNER lock (which Run refuses) are left to
// Run.
func TestStartRenew(t *testing.T) {
	h, s := embeddedSession(t)
	exec := func(words ...string) string {
		var r recorder
		h.Exec(s, byteArgs(words), &r)
		return r.String()
	}
	start := func(words ...string) (string, bool) { t.Helper(); return startReply(t, h, s, words...) }
	pttl := func(key string) int64 {
		t.Helper()
		n, err := strconv.ParseInt(strings.TrimPrefix(exec("PTTL", key), ":"), 10, 64)
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		return n
	}
	touch := sha1Hex(redsyncTouch)

	if got := exec("SET", "k", "tok", "NX", "PX", "10000"); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	got, ok := start("RENEW", "k", "tok", "30000")
	if !ok {
		t.Fatal("RENEW has no asynchronous form")
	}
	if v, err := strconv.ParseInt(strings.TrimPrefix(got, ":"), 10, 64); err != nil || v < 25000 || v > 30000 {
		t.Fatalf("RENEW of a held lock: %s, want its validity near 30000", got)
	}
	if n := pttl("k"); n < 25000 {
		t.Fatalf("PTTL after RENEW 30000: %d", n)
	}
	if got, ok = start("EVALSHA", touch, "1", "k", "tok", "50000"); !ok || got != ":1" {
		t.Fatalf("go-redsync touch of a held lock: %s (started %v), want :1", got, ok)
	}
	if n := pttl("k"); n < 45000 {
		t.Fatalf("PTTL after the touch of 50000: %d", n)
	}
	if got, ok = start("RENEW", "k", "other", "20000"); !ok || got != "nil" {
		t.Fatalf("RENEW by another token: %s (started %v), want nil", got, ok)
	}
	if got, ok = start("EVALSHA", touch, "1", "k", "other", "20000"); !ok || got != ":0" {
		t.Fatalf("go-redsync touch by another token: %s (started %v), want :0", got, ok)
	}
	if n := pttl("k"); n < 40000 {
		t.Fatalf("PTTL after refused renewals: %d, want the touch's", n)
	}
	if got, ok = start("RENEW", "k", "tok", "x"); !ok || !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("RENEW with a bad ttl: %s (started %v), want an error", got, ok)
	}

	// redis-py's extend adds to the ttl left (replace "0"), capped at
	// max-ttl, or replaces it.
	pyExtend := sha1Hex(redisPyExtend)
	before := pttl("k")
	if got, ok = start("EVALSHA", pyExtend, "1", "k", "tok", "5000", "0"); !ok || got != ":1" {
		t.Fatalf("redis-py extend (add) of a held lock: %s (started %v), want :1", got, ok)
	}
	if n := pttl("k"); n < before+4000 || n > 60000 {
		t.Fatalf("PTTL after adding 5000 to %d: %d", before, n)
	}
	if got, ok = start("EVALSHA", pyExtend, "1", "k", "tok", "20000", "1"); !ok || got != ":1" {
		t.Fatalf("redis-py extend (replace) of a held lock: %s (started %v), want :1", got, ok)
	}
	if n := pttl("k"); n > 20000 || n < 15000 {
		t.Fatalf("PTTL after replacing it by 20000: %d", n)
	}
	if got, ok = start("EVALSHA", pyExtend, "1", "k", "other", "5000", "0"); !ok || got != ":0" {
		t.Fatalf("redis-py extend by another token: %s (started %v), want :0", got, ok)
	}

	// An OWNER lock's holds are renewed with it.
	lock := exec("LOCK", "o", "10000", "OWNER", "me")
	otok := strings.TrimPrefix(strings.Fields(strings.Trim(lock, "[]"))[0], "$")
	if !quorum.IsOwnerToken(otok) {
		t.Fatalf("LOCK … OWNER: %s", lock)
	}
	if got, ok = start("RENEW", "o", otok, "30000"); !ok || !strings.HasPrefix(got, ":") || got == ":0" {
		t.Fatalf("RENEW of an owner lock: %s (started %v)", got, ok)
	}
	if n := pttl("o"); n < 25000 {
		t.Fatalf("PTTL of the owner lock after RENEW 30000: %d", n)
	}

	// Left to Run.
	if got := exec("LOCK", "kept", "10000", "TOKEN", "t", "KEEPALIVE"); !strings.HasPrefix(got, "[$t ") {
		t.Fatalf("LOCK … KEEPALIVE: %s", got)
	}
	for _, words := range [][]string{
		{"RENEW", "kept", "t", "60000"},
		{"EVALSHA", touch, "1", "kept", "t", "60000"},
		{"EVALSHA", touch, "2", "k", "x", "tok", "60000"},
		{"EVALSHA", touch, "1", "k", "tok"},
		{"EVALSHA", sha1Hex(cadScript), "1", "k", "tok", "60000"},
		{"EVALSHA", sha1Hex(redisPyExtend), "1", "o", otok, "5000", "0"},
		{"EVALSHA", sha1Hex(redisPyExtend), "1", "k", "tok", "5000"},
	} {
		if got, ok := start(words...); ok {
			t.Errorf("%v started (%s), want it left to Run", words, got)
		}
	}
}

// node-redlock's acquire, extend and release of one key are the plain
// lock's, started: 1 where they took, renewed or released it, 0 where
// another token holds it or it is gone; with several keys they are left
// to Run (the all-or-nothing rounds of AcquireAll and ExtendAll).
func TestStartRedlockScripts(t *testing.T) {
	h, s := embeddedSession(t)
	start := func(words ...string) (string, bool) { t.Helper(); return startReply(t, h, s, words...) }
	acquire, extend, release := sha1Hex(redlockAcquireV5), sha1Hex(redlockExtendV5), sha1Hex(redlockReleaseV5)
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"EVALSHA", acquire, "1", "r", "v1", "10000"}, ":1"},
		{[]string{"EVALSHA", acquire, "1", "r", "v2", "10000"}, ":0"},
		{[]string{"EVALSHA", extend, "1", "r", "v1", "20000"}, ":1"},
		{[]string{"EVALSHA", extend, "1", "r", "v2", "20000"}, ":0"},
		{[]string{"EVALSHA", release, "1", "r", "v2"}, ":0"},
		{[]string{"EVALSHA", release, "1", "r", "v1"}, ":1"},
		{[]string{"EVALSHA", release, "1", "r", "v1"}, ":0"},
		{[]string{"EVALSHA", acquire, "1", "r", "v2", "x"}, "-ERR"},
	} {
		got, ok := start(tc.words...)
		if !ok || !strings.HasPrefix(got, tc.want) {
			t.Fatalf("%v: %s (started %v), want %s", tc.words, got, ok, tc.want)
		}
	}
	var r recorder
	h.Exec(s, byteArgs([]string{"PTTL", "r"}), &r)
	if r.String() != ":-2" {
		t.Fatalf("PTTL r after its release: %s", r.String())
	}
	for _, words := range [][]string{
		{"EVALSHA", acquire, "2", "a", "b", "v", "10000"},
		{"EVALSHA", extend, "2", "a", "b", "v", "10000"},
		{"EVALSHA", release, "2", "a", "b", "v"},
	} {
		if got, ok := start(words...); ok {
			t.Errorf("%v started (%s), want it left to Run", words, got)
		}
	}
}

// TestStartedRenewBoundMeanwhileReportsItsRound: a started RENEW whose
// lock a connection binds while its round is in flight answers from a
// goroutine of its own (onRenewed), after its round's continuation has
// returned and the round's report has gone back to its pool. Its report
// must still name its round, as the same RENEW's report does without the
// binding. The binding is a forced SET of the same token on the same
// connection, and an OWNER's KEEPALIVE hold taken by another connection.
func TestStartedRenewBoundMeanwhileReportsItsRound(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		lock     func(h *Handler, s *Session) (key, token string)
		bind     func(t *testing.T, h *Handler, s *Session, key, token string)
	}{
		{"forced SET", "CompareAndExtend",
			func(h *Handler, s *Session) (string, string) {
				execOn(h, s, "SET", "k", "tok", "NX", "PX", "10000")
				return "k", "tok"
			},
			func(t *testing.T, h *Handler, s *Session, key, token string) {
				if got := execOn(h, s, "SET", key, token); got != "+OK" {
					t.Fatalf("SET %s %s: %s", key, token, got)
				}
			}},
		{"OWNER kept by another connection", "ExtendHeld",
			func(h *Handler, s *Session) (string, string) {
				got := execOn(h, s, "LOCK", "o", "10000", "OWNER", "me")
				return "o", strings.TrimPrefix(strings.Fields(strings.Trim(got, "[]"))[0], "$")
			},
			func(t *testing.T, h *Handler, _ *Session, key, token string) {
				s2 := h.NewSession("127.0.0.1:2")
				t.Cleanup(func() { h.CloseSession(s2) })
				if got := execOn(h, s2, "LOCK", key, "10000", "OWNER", "me", "KEEPALIVE"); !strings.Contains(got, token) {
					t.Fatalf("LOCK %s … OWNER me KEEPALIVE: %s", key, got)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := newCountingObserver()
			h, s, slow := reportsHandler(t, obs)
			key, token := tc.lock(h, s)
			slow.SetOpDelay(tc.op, time.Second)
			renew := func(bind bool) string {
				obs.take()
				var r recorder
				done := make(chan struct{})
				if !h.Start(s, NewRequest(byteArgs([]string{"RENEW", key, token, "30000"})), &r, func() { close(done) }) {
					t.Fatal("RENEW not started")
				}
				if bind {
					tc.bind(t, h, s, key, token)
					select {
					case <-done:
						t.Fatal("the RENEW ended before the binding was made")
					default:
					}
				}
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("RENEW not done")
				}
				if !strings.HasPrefix(r.String(), ":") {
					t.Fatalf("RENEW: %s", r.String())
				}
				for _, rep := range obs.take() {
					if strings.HasPrefix(rep, "CommandDone renew") {
						return rep
					}
				}
				t.Fatal("RENEW not reported")
				return ""
			}
			want := renew(false)
			if !strings.Contains(want, "round=extend/ok") {
				t.Fatalf("RENEW's report: %q", want)
			}
			if got := renew(true); got != want {
				t.Fatalf("RENEW's report with the lock bound meanwhile: %q, want %q", got, want)
			}
		})
	}
}

// execOn runs words on s and returns the reply.
func execOn(h *Handler, s *Session, words ...string) string {
	var r recorder
	h.Exec(s, byteArgs(words), &r)
	return r.String()
}
