package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Every ttl a Cmd carries reaches the server in whole milliseconds,
// rounded up: 1.5ms is sent as 2. The server's slow log (every command
// logged) shows the arguments as sent.
func TestRedisDoTTLRoundsUp(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	const d = 1500 * time.Microsecond
	cmds := []quorum.Cmd{
		{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: d},
		{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute, Add: d},
		{Kind: quorum.Set, Key: "k", Token: tok, TTL: d},
		{Kind: quorum.Expire, Key: "k", TTL: d},
		{Kind: quorum.CompareAndExtend, Key: "k", Token: tok, TTL: d},
		{Kind: quorum.ExtendOrSetNX, Key: "k", Token: tok, TTL: d},
		{Kind: quorum.AddTTL, Key: "k", Token: tok, Add: d, Limit: time.Minute},
		{Kind: quorum.SetNXAll, Keys: []string{"k"}, Token: tok, TTL: d},
		{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: pfx, Token: pfx, TTL: d},
		{Kind: quorum.RestoreHeld, Key: "k", Token: tok, N: 1, TTL: d},
		{Kind: quorum.RaiseFence, Key: "f", N: 7, TTL: d},
	}
	for _, cmd := range cmds {
		t.Run(OpName(cmd.Kind), func(t *testing.T) {
			if err := c.ConfigSet(t.Context(), "slowlog-log-slower-than", "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.SlowLogReset(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			if rep := quorum.Call(t.Context(), r, cmd); rep.Err != nil {
				t.Fatal(rep.Err)
			}
			logs, err := c.SlowLogGet(t.Context(), 16).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range logs {
				args := l.Args[2:] // past the command and its key
				switch strings.ToLower(l.Args[0]) {
				case "evalsha", "eval":
					args = l.Args[3:] // past the script and its key count
				case "set", "pexpire":
				default:
					continue
				}
				if !slices.Contains(args, "2") || slices.Contains(args, "1") {
					t.Fatalf("sent %q; want 1.5ms as 2", l.Args)
				}
				return
			}
			t.Fatalf("command not in the slow log: %+v", logs)
		})
	}
}

// Every script is found again after SCRIPT FLUSH: EVALSHA meets NOSCRIPT
// and the same call is sent as EVAL, which caches the script again.
func TestRedisDoNoScript(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	cases := []struct {
		cmd quorum.Cmd
		s   *Script
	}{
		{quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok}, compareAndDeleteScript},
		{quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok, Notify: true}, compareAndDeleteNotifyScript},
		{quorum.Cmd{Kind: quorum.Get, Key: "k"}, getScript},
		{quorum.Cmd{Kind: quorum.ReleaseEach, Keys: []string{"k", "j"}, Token: tok}, releaseEachScript},
		{quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: "t", Token: "t2", TTL: time.Minute}, holdOwnerScript},
	}
	for _, tc := range cases {
		t.Run(OpName(tc.cmd.Kind), func(t *testing.T) {
			if err := c.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(t.Context(), "k", tok, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.ScriptFlush(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			rep := quorum.Call(t.Context(), r, tc.cmd)
			if rep.Err != nil || !rep.OK {
				t.Fatalf("after SCRIPT FLUSH: %+v", rep)
			}
			if ok, err := c.ScriptExists(t.Context(), tc.s.sha).Result(); err != nil || !ok[0] {
				t.Fatalf("script not cached again: %v, %v", ok, err)
			}
		})
	}
}

// A server's error reply is a ServerError carrying its code, found with
// errors.Is and errors.As, also from inside a script.
func TestRedisDoServerError(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := srv.Client().HSet(t.Context(), "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []quorum.Cmd{
		{Kind: quorum.CompareAndDelete, Key: "h", Token: tok}, // a script
		{Kind: quorum.ReadFence, Key: "h"},                    // a plain GET
	} {
		err := quorum.Call(t.Context(), r, cmd).Err
		var se ServerError
		if !errors.As(err, &se) || se.Code != "WRONGTYPE" || !errors.Is(err, ServerError{Code: "WRONGTYPE"}) {
			t.Fatalf("%s on a hash: err = %v, want a WRONGTYPE ServerError", OpName(cmd.Kind), err)
		}
		if errors.Is(err, errNoScript) {
			t.Fatalf("%v matches NOSCRIPT", err)
		}
	}
}

// Commands on one key keep their order whatever else they name: a round's
// mark key, or the other keys of a multi-key command, never choose the
// line. Hundreds are in flight at once over several lines; a hold or lock
// that overtook the release before it would find the key still held.
func TestRedisDoKeepsPerKeyOrder(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.Addr(), RedisOptions{Conns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	const rounds = 300
	type sent struct {
		cmd  quorum.Cmd
		want quorum.Reply
	}
	var seq []sent
	for i := range rounds {
		other := fmt.Sprintf("o%d", i)
		m := fmt.Sprintf("redlockd:hold:{h}:%d", i)
		seq = append(seq,
			sent{quorum.Cmd{Kind: quorum.HoldOwner, Key: "h", Mark: m, Prefix: pfx, Token: pfx + other, TTL: time.Minute}, quorum.Reply{OK: true, Token: pfx + other, N: 1}},
			sent{quorum.Cmd{Kind: quorum.Unhold, Key: "h", Token: pfx + other}, quorum.Reply{OK: true}},
			sent{quorum.Cmd{Kind: quorum.SetNXAll, Keys: []string{"m", other}, Token: tok, TTL: time.Minute}, quorum.Reply{OK: true, N: 1}},
			sent{quorum.Cmd{Kind: quorum.ReleaseEach, Keys: []string{"m", other}, Token: tok}, quorum.Reply{OK: true, Each: []bool{true, true}}},
		)
	}
	got := make([]quorum.Reply, len(seq))
	var wg sync.WaitGroup
	wg.Add(len(seq))
	dl := time.Now().Add(pollBound)
	for i, s := range seq {
		r.Do(dl, s.cmd, quorum.ReceiverFunc(func(rep quorum.Reply) { got[i] = rep; wg.Done() }))
	}
	wg.Wait()
	for i, s := range seq {
		g := got[i]
		if g.Err != nil || g.OK != s.want.OK || g.Token != s.want.Token || g.N != s.want.N || !slices.Equal(g.Each, s.want.Each) {
			t.Fatalf("command %d (%s) = %+v, want %+v", i, OpName(s.cmd.Kind), g, s.want)
		}
	}
}

// A script that is the first command on a new connection, to a server
// that does not hold it, still runs before the command sent right behind
// it: the release is not retried (as EVAL, after NOSCRIPT) behind the
// next round's SET NX.
func TestRedisDoScriptOnNewConnectionKeepsOrder(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	for i := range 20 {
		if err := c.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(t.Context(), "k", tok, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		r := newTestRedis(t, srv.Addr())
		release, lock := make(chan quorum.Reply, 1), make(chan quorum.Reply, 1)
		dl := time.Now().Add(pollBound)
		r.Do(dl, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok}, quorum.ReceiverFunc(func(rep quorum.Reply) { release <- rep }))
		r.Do(dl, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: other, TTL: time.Minute}, quorum.ReceiverFunc(func(rep quorum.Reply) { lock <- rep }))
		if rep := <-release; rep.Err != nil || rep.N != 1 {
			t.Fatalf("round %d: release = %+v, want it deleted", i, rep)
		}
		if rep := <-lock; rep.Err != nil || !rep.OK {
			t.Fatalf("round %d: the SET NX behind the release = %+v: it overtook the release", i, rep)
		}
		_ = r.Close()
	}
}

// The release subscription has a connection of its own, and comes back
// (resubscribed) after its server restarts.
func TestRedisWatchSubscriptionSurvivesRestart(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	keys := make(chan string, 16)
	if !r.Watch(quorum.Watcher{Released: func(_ int, k string) { keys <- k }}) {
		t.Fatal("Watch: the Redis node must identify its server")
	}
	for round := range 2 {
		waitSubscribed(t, []*redistest.Server{srv}, 1)
		if err := srv.Client().Publish(t.Context(), releaseChannel, fmt.Sprint("k", round)).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case k := <-keys:
			if k != fmt.Sprint("k", round) {
				t.Fatalf("released %q", k)
			}
		case <-time.After(pollBound):
			t.Fatalf("round %d: no release delivered", round)
		}
		if round == 0 {
			srv.Restart(t)
		}
	}
}

// The periodic look reads INFO on a connection of its own, never on a
// line of the lock commands; Info uses it too. After Close, every
// connection and goroutine of the node is gone.
func TestRedisInfoOwnConnection(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	before := goleak.IgnoreCurrent()
	r, err := NewRedis(srv.Addr(), RedisOptions{Conns: 1, HealthInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	looks := make(chan quorum.ServerInfo, 1)
	r.Watch(quorum.Watcher{Server: func(in quorum.ServerInfo) {
		select {
		case looks <- in:
		default:
		}
	}})
	if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute}); rep.Err != nil || !rep.OK {
		t.Fatalf("SetNX = %+v", rep)
	}
	if in := <-looks; in.Err != nil || len(in.RunID) != 40 || in.Replica {
		t.Fatalf("look = %+v", in)
	}
	// The lock line last ran SET; the health connection, INFO.
	poll(t, "a look on its own connection", func() bool {
		<-looks
		list := c.ClientList(t.Context()).Val()
		return strings.Contains(list, " cmd=set ") && strings.Count(list, " cmd=info ") == 1
	})
	if text, err := r.watch.info(t.Context(), "info", "server"); err != nil || !strings.Contains(text, "run_id:") {
		t.Fatalf("Info = %.60q, %v", text, err)
	}
	n := clients(t, srv)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the node's connections closed", func() bool { return clients(t, srv) == n-2 })
	goleak.VerifyNone(t, leaktest.Options(before)...)
}

// clients is the number of client connections the server has.
func clients(t *testing.T, s *redistest.Server) int {
	t.Helper()
	return strings.Count(s.Client().ClientList(t.Context()).Val(), "\n")
}

// A script sent to a stalled server fails at its deadline with an error
// matching context.DeadlineExceeded, and the node works again once the
// server does.
func TestRedisDoStalledScriptDeadline(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute}); !rep.OK {
		t.Fatalf("SetNX = %+v", rep)
	}
	srv.Stop()
	stopped := true
	defer func() {
		if stopped {
			srv.Cont()
		}
	}()
	ch := make(chan quorum.Reply, 1)
	r.Do(time.Now().Add(50*time.Millisecond), quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok},
		quorum.ReceiverFunc(func(rep quorum.Reply) { ch <- rep }))
	select {
	case rep := <-ch:
		if !errors.Is(rep.Err, context.DeadlineExceeded) || rep.OK {
			t.Fatalf("on a stopped server: %+v, want an error matching context.DeadlineExceeded", rep)
		}
	case <-time.After(pollBound):
		t.Fatal("no reply from a stopped server")
	}
	srv.Cont()
	stopped = false
	// The script may have run late (the server had it): only the node's
	// own recovery is asserted, and that a late reply is not taken for the
	// next command's.
	if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.SetNX, Key: "k2", Token: tok, TTL: time.Minute}); rep.Err != nil || !rep.OK {
		t.Fatalf("SetNX after SIGCONT: %+v", rep)
	}
	if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.Get, Key: "k2"}); rep.Err != nil || rep.Token != tok {
		t.Fatalf("Get after SIGCONT: %+v", rep)
	}
}

// discard is a Receiver that only counts, for the allocation figure.
type discard struct{ wg *sync.WaitGroup }

func (d discard) Receive(quorum.Reply) { d.wg.Done() }

// TestRedisDoAllocs guards the allocations of one command through Do, from
// the call to its reply. The call (with its request and RESP buffer) is
// taken from a pool, which its line refills as it lets go of answered
// calls: at their deadline, or by the few hundred. A ttl's digits are
// written on the stack.
func TestRedisDoAllocs(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	cases := []struct {
		cmd quorum.Cmd
		max float64
	}{
		{quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute}, 0},
		{quorum.Cmd{Kind: quorum.CompareAndExtend, Key: "k", Token: tok, TTL: time.Minute}, 0},
		{quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "absent", Token: tok}, 0},
		// A user's release, announced to waiters, is longer than a
		// request's inline room: the pooled call keeps the buffer it grew.
		{quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "user:12345:lock", Token: "0123456789abcdef0123456789abcdef", Notify: true}, 0},
		// Another db costs the same once its lines exist.
		{quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute, DB: 3}, 0},
	}
	for _, tc := range cases {
		var wg sync.WaitGroup
		rcv := discard{&wg}
		// Fill the pool: calls with a short deadline, let go of once it
		// has passed.
		warm := time.Now().Add(50 * time.Millisecond)
		for range 300 {
			wg.Add(1)
			r.Do(warm, tc.cmd, rcv)
			wg.Wait()
		}
		time.Sleep(time.Until(warm) + 100*time.Millisecond)
		dl := time.Now().Add(time.Minute)
		allocs := testing.AllocsPerRun(200, func() {
			wg.Add(1)
			r.Do(dl, tc.cmd, rcv)
			wg.Wait()
		})
		t.Logf("%s: %.1f allocations", OpName(tc.cmd.Kind), allocs)
		if allocs > tc.max {
			t.Errorf("%s: %.1f allocations per call, want at most %.0f", OpName(tc.cmd.Kind), allocs, tc.max)
		}
	}
}

// SET NX PX, encoded by hand for speed, is exactly the command the
// general encoder writes, whatever the key, token and ttl.
func TestSetNXPXEncoding(t *testing.T) {
	for _, tc := range []struct {
		key, token string
		ttl        time.Duration
	}{
		{"k", "tok", 10 * time.Second},
		{"", "t", time.Millisecond},
		{"a\r\nb", strings.Repeat("x", 300), 1500 * time.Microsecond},
		{"{user:7}:lock", "owner:1:w:abc", 24 * time.Hour},
	} {
		c := &call{}
		c.setNXPX(tc.key, tc.token, tc.ttl)
		ms, _ := ceilMillis(tc.ttl)
		want := resp.AppendCommand(nil, []string{"set", tc.key, tc.token, "nx", "px", strconv.FormatInt(ms, 10)})
		if c.err != nil || string(c.req.Buf) != string(want) {
			t.Errorf("setNXPX(%q, %q, %v) = %q, %v; want %q", tc.key, tc.token, tc.ttl, c.req.Buf, c.err, want)
		}
	}
	c := &call{}
	if c.setNXPX("k", "t", -time.Millisecond); c.err == nil {
		t.Error("setNXPX with a negative ttl: no error")
	}
}

// A script with a ttl, encoded without building the ttl as a string, is
// exactly the EVALSHA the general encoder writes.
func TestScriptTTLEncoding(t *testing.T) {
	for _, tc := range []struct {
		keys, args []string
		ttl        time.Duration
	}{
		{[]string{"k"}, []string{"tok"}, 10 * time.Second},
		{[]string{"a\r\nb"}, []string{strings.Repeat("x", 300)}, 1500 * time.Microsecond},
		{[]string{"{user:7}:lock", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}, []string{"", "owner:1:w:abc"}, 24 * time.Hour},
		{nil, nil, time.Millisecond},
	} {
		c := &call{}
		c.scriptTTL(compareAndExtendScript, readYes, tc.keys, tc.ttl, tc.args...)
		ms, _ := ceilMillis(tc.ttl)
		want := appendScript(nil, compareAndExtendScript, false, tc.keys, append(tc.args, strconv.FormatInt(ms, 10))...)
		if c.err != nil || string(c.req.Buf) != string(want) || c.s != compareAndExtendScript {
			t.Errorf("scriptTTL(%q, %q, %v) = %q, %v; want %q", tc.keys, tc.args, tc.ttl, c.req.Buf, c.err, want)
		}
	}
	c := &call{}
	if c.scriptTTL(compareAndExtendScript, readYes, []string{"k"}, 0, "t"); c.err == nil {
		t.Error("scriptTTL with no ttl: no error")
	}
}

// The NOSCRIPT resend is rebuilt from the bytes sent: it must be exactly
// the EVAL of the same keys and arguments.
func TestEvalFormIsTheEvalOfTheSameCall(t *testing.T) {
	for _, tc := range []struct {
		keys, args []string
	}{
		{[]string{"k"}, []string{"tok"}},
		{[]string{"k", "redlockd:holds:{k}", "mark"}, []string{"owner:1:w:", "tok", "30000"}},
		{[]string{"a", "b", "c", "d"}, []string{"x\r\ny", ""}},
	} {
		c := &call{}
		c.script(holdOwnerScript, nil, tc.keys, tc.args...)
		want := append([]string{"eval", holdOwnerScript.src, strconv.Itoa(len(tc.keys))}, tc.keys...)
		want = append(want, tc.args...)
		if got, w := string(evalForm(c.req.Buf, holdOwnerScript)), string(resp.AppendCommand(nil, want)); got != w {
			t.Errorf("evalForm(%v %v) = %q, want %q", tc.keys, tc.args, got, w)
		}
	}
}

// A node's lock connections open, and load every script, when a Cluster
// starts watching it: the first lock after start-up pays for neither
// within its node timeout. No command goes through the node here.
func TestRedisLinesWarmBeforeFirstCommand(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	if err := c.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	before := clients(t, srv)
	r, err := NewRedis(srv.Addr(), RedisOptions{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Watch(quorum.Watcher{})
	shas := make([]string, len(allScripts))
	for i, s := range allScripts {
		shas[i] = s.sha
	}
	poll(t, "both lines connected with every script loaded", func() bool {
		loaded, err := c.ScriptExists(t.Context(), shas...).Result()
		return err == nil && clients(t, srv) >= before+2 && !slices.Contains(loaded, false)
	})
}
