package e2e

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// wantErr fails unless err's text is exactly want.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("%s: %v, want %q", what, err, want)
	}
}

// oneMinuteMaxTTL is an instance whose --max-ttl is 1m, for the checks
// of a ttl over it.
var oneMinuteMaxTTL = redlocktest.Options{Commands: commands.Options{MaxTTL: time.Minute}}

// TestKeyCommandReplies checks docs/commands.md's EXISTS, TTL, [P]EXPIRE
// and DEL replies against real backends.
func TestKeyCommandReplies(t *testing.T) {
	in := redlocktest.Start(t, oneMinuteMaxTTL)
	c := in.Client(t, 2)
	ctx := ctxT(t)
	lock(t, c, "a", 10000)
	lock(t, c, "b", 10000)
	if n, err := c.Exists(ctx, "a", "b", "missing").Result(); err != nil || n != 2 {
		t.Fatalf("EXISTS a b missing = %d, %v; want 2", n, err)
	}
	if s, err := c.Do(ctx, "TTL", "a").Int(); err != nil || s < 9 || s > 10 {
		t.Fatalf("TTL of a 10 s lock = %d, %v; want seconds in [9, 10]", s, err)
	}
	if s, err := c.Do(ctx, "TTL", "missing").Int(); err != nil || s != -2 {
		t.Fatalf("TTL of a free key = %d, %v; want -2", s, err)
	}
	if n, err := c.Do(ctx, "EXPIRE", "a", 30).Int(); err != nil || n != 1 {
		t.Fatalf("EXPIRE a 30 = %d, %v; want 1", n, err)
	}
	if s, err := c.Do(ctx, "TTL", "a").Int(); err != nil || s <= 10 || s > 30 {
		t.Fatalf("TTL after EXPIRE a 30 = %d, %v", s, err)
	}
	if n, err := c.Do(ctx, "PEXPIRE", "b", 2000).Int(); err != nil || n != 1 {
		t.Fatalf("PEXPIRE b 2000 = %d, %v; want 1", n, err)
	}
	if p, err := c.Do(ctx, "PTTL", "b").Int(); err != nil || p <= 0 || p > 2000 {
		t.Fatalf("PTTL after PEXPIRE b 2000 = %d, %v", p, err)
	}
	for _, s := range in.Backends {
		if p, err := s.Client().PTTL(ctx, "b").Result(); err != nil || p <= 0 || p > 2*time.Second {
			t.Fatalf("backend %s PTTL b = %v, %v; want the new ttl everywhere", s.Addr(), p, err)
		}
	}
	if n, err := c.Do(ctx, "PEXPIRE", "missing", 2000).Int(); err != nil || n != 0 {
		t.Fatalf("PEXPIRE of a free key = %d, %v; want 0", n, err)
	}
	_, err := c.Do(ctx, "PEXPIRE", "a", 61000).Result()
	wantErr(t, "PEXPIRE over max-ttl", err, "ERR ttl exceeds max-ttl")
	if n, err := c.Del(ctx, "a", "b", "missing").Result(); err != nil || n != 2 {
		t.Fatalf("DEL a b missing = %d, %v; want 2", n, err)
	}
	if vals := append(in.BackendValues(t, "a"), in.BackendValues(t, "b")...); redlocktest.Count(vals, "<nil>") != 6 {
		t.Fatalf("after DEL the backends hold %v", vals)
	}
}

// TestSetForms checks the SET forms of docs/commands.md: absolute
// expiries, session locks, forced takeover, IFEQ extend, refused forms and
// max-ttl.
func TestSetForms(t *testing.T) {
	in := redlocktest.Start(t, oneMinuteMaxTTL)
	c := in.Client(t, 2)
	ctx := ctxT(t)
	exat := strconv.FormatInt(time.Now().Add(10*time.Second).Unix(), 10)
	if s, err := c.Do(ctx, "SET", "e", "t", "NX", "EXAT", exat).Text(); err != nil || s != "OK" {
		t.Fatalf("SET NX EXAT = %q, %v", s, err)
	}
	if p, err := c.Do(ctx, "PTTL", "e").Int(); err != nil || p <= 8000 || p > 10000 {
		t.Fatalf("PTTL after EXAT now+10s = %d, %v", p, err)
	}
	pxat := strconv.FormatInt(time.Now().Add(5*time.Second).UnixMilli(), 10)
	if s, err := c.Do(ctx, "SET", "p", "t", "NX", "PXAT", pxat).Text(); err != nil || s != "OK" {
		t.Fatalf("SET NX PXAT = %q, %v", s, err)
	}
	if p, err := c.Do(ctx, "PTTL", "p").Int(); err != nil || p <= 3000 || p > 5000 {
		t.Fatalf("PTTL after PXAT now+5s = %d, %v", p, err)
	}
	_, err := c.Do(ctx, "SET", "m", "t", "NX", "PX", 61000).Result()
	wantErr(t, "SET NX PX over max-ttl", err, "ERR ttl exceeds max-ttl")
	_, err = c.Do(ctx, "LOCK", "m", 61000).Result()
	wantErr(t, "LOCK over max-ttl", err, "ERR ttl exceeds max-ttl")
	_, err = c.Do(ctx, "SET", "m", "t", "NX", "PX", "450359962737049").Result()
	wantErr(t, "SET NX PX far past max-ttl", err, "ERR ttl exceeds max-ttl")
	_, err = c.Do(ctx, "EVAL", "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", 1, "m", "t", 61000).Result()
	wantErr(t, "SET NX PX over max-ttl by script", err, "ERR ttl exceeds max-ttl")
	if vals := in.BackendValues(t, "m"); redlocktest.Count(vals, "<nil>") != len(vals) {
		t.Fatalf("after the refused script the backends hold %v", vals)
	}

	// Session lock: no expiry, -1 to TTL/PTTL, a ttl on every backend.
	if s, err := c.Do(ctx, "SET", "s", "tok", "NX").Text(); err != nil || s != "OK" {
		t.Fatalf("SET NX without expiry = %q, %v", s, err)
	}
	for _, cmd := range []string{"TTL", "PTTL"} {
		if n, err := c.Do(ctx, cmd, "s").Int(); err != nil || n != -1 {
			t.Fatalf("%s of a session lock = %d, %v; want -1", cmd, n, err)
		}
	}
	for _, s := range in.Backends {
		if p, err := s.Client().PTTL(ctx, "s").Result(); err != nil || p <= 0 {
			t.Fatalf("backend %s PTTL of a session lock = %v, %v; want a ttl", s.Addr(), p, err)
		}
	}

	// Forced takeover: without NX the value replaces the holder's.
	lock(t, c, "f", 10000)
	if s, err := c.Do(ctx, "SET", "f", "mine", "PX", 5000).Text(); err != nil || s != "OK" {
		t.Fatalf("SET without NX over a held lock = %q, %v", s, err)
	}
	if vals := in.BackendValues(t, "f"); redlocktest.Count(vals, "mine") != 3 {
		t.Fatalf("after a forced SET the backends hold %v", vals)
	}

	// IFEQ extends only for the holder.
	if s, err := c.Do(ctx, "SET", "f", "mine", "XX", "PX", 20000, "IFEQ", "mine").Text(); err != nil || s != "OK" {
		t.Fatalf("SET XX PX IFEQ by the holder = %q, %v", s, err)
	}
	if p, err := c.Do(ctx, "PTTL", "f").Int(); err != nil || p <= 10000 {
		t.Fatalf("PTTL after IFEQ extend = %d, %v", p, err)
	}
	if _, err := c.Do(ctx, "SET", "f", "other", "XX", "PX", 20000, "IFEQ", "other").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("SET IFEQ by a non-holder: %v, want null", err)
	}

	_, err = c.Do(ctx, "SET", "f", "v", "GET").Result()
	wantErr(t, "SET … GET", err, "ERR redlockd does not support this form of 'set': GET is not a lock operation")
	for _, args := range [][]any{{"SET", "f", "v", "KEEPTTL"}, {"SET", "f", "v", "XX", "PX", 1000}} {
		_, err := c.Do(ctx, args...).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR redlockd does not support this form of 'set': ") {
			t.Errorf("%v: %v, want the unsupported-form error", args, err)
		}
	}
}

// TestCompareAndDeleteForms checks DELIFEQ, DELEX IFEQ, SCRIPT EXISTS and
// that another script body runs replicated.
func TestCompareAndDeleteForms(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	tok, _ := lock(t, c, "d", 10000)
	if n, err := c.Do(ctx, "DELIFEQ", "d", "other").Int(); err != nil || n != 0 {
		t.Fatalf("DELIFEQ with another token = %d, %v; want 0", n, err)
	}
	if n, err := c.Do(ctx, "DELIFEQ", "d", tok).Int(); err != nil || n != 1 {
		t.Fatalf("DELIFEQ by the holder = %d, %v; want 1", n, err)
	}
	tok, _ = lock(t, c, "d", 10000)
	if n, err := c.Do(ctx, "DELEX", "d", "IFEQ", tok).Int(); err != nil || n != 1 {
		t.Fatalf("DELEX IFEQ by the holder = %d, %v; want 1", n, err)
	}
	if vals := in.BackendValues(t, "d"); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("after DELEX the backends hold %v", vals)
	}
	sha, err := c.ScriptLoad(ctx, cad).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result()
	if err != nil || len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("SCRIPT EXISTS known unknown = %v, %v; want [true false]", got, err)
	}
	// Another body is no longer refused: it runs replicated.
	if n, err := c.Eval(ctx, "return 1", nil).Int(); err != nil || n != 1 {
		t.Fatalf("EVAL of another body = %d, %v; want 1", n, err)
	}
}

// TestConnectionCommands checks the connection and server commands of
// docs/commands.md that are not compared with redis-server elsewhere.
func TestConnectionCommands(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 3, PoolSize: 1})
	defer c.Close()
	ctx := ctxT(t)
	if s, err := c.Echo(ctx, "hi").Result(); err != nil || s != "hi" {
		t.Fatalf("ECHO = %q, %v", s, err)
	}
	if s, err := c.Do(ctx, "SELECT", 0).Text(); err != nil || s != "OK" {
		t.Fatalf("SELECT 0 = %q, %v", s, err)
	}
	_, err := c.Do(ctx, "SELECT", 16).Result()
	wantErr(t, "SELECT 16", err, "ERR DB index is out of range")
	_, err = c.Do(ctx, "AUTH", "pw").Result()
	wantErr(t, "AUTH without requirepass", err, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	if s, err := c.Do(ctx, "AUTH", "default", "pw").Text(); err != nil || s != "OK" {
		t.Fatalf("AUTH default pw without requirepass = %q, %v", s, err)
	}
	for pat, want := range map[string]string{"save": "", "appendonly": "no"} {
		got, err := c.ConfigGet(ctx, pat).Result()
		if v, ok := got[pat]; err != nil || len(got) != 1 || !ok || v != want {
			t.Fatalf("CONFIG GET %s = %v, %v; want %q", pat, got, err, want)
		}
	}
	if err := c.ConfigSet(ctx, "save", "").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
		t.Fatalf("CONFIG SET: %v, want an error", err)
	}
	hello, err := c.Do(ctx, "HELLO", 3, "AUTH", "default", "pw", "SETNAME", "claims").Result()
	if m, ok := hello.(map[any]any); err != nil || !ok || m["proto"] != int64(3) || m["server"] != "redis" {
		t.Fatalf("HELLO 3 AUTH SETNAME = %#v, %v; want the server map with proto 3", hello, err)
	}
	if s, err := c.ClientGetName(ctx).Result(); err != nil || s != "claims" {
		t.Fatalf("CLIENT GETNAME after HELLO SETNAME = %q, %v", s, err)
	}
	if err := c.Do(ctx, "CLIENT", "SETNAME", "other").Err(); err != nil {
		t.Fatal(err)
	}
	if s, err := c.ClientGetName(ctx).Result(); err != nil || s != "other" {
		t.Fatalf("CLIENT GETNAME after SETNAME = %q, %v", s, err)
	}
	_, err = c.Do(ctx, "NOSUCH", "x", "y").Result()
	wantErr(t, "unknown command", err, "ERR unknown command 'NOSUCH', with args beginning with: 'x' 'y' ")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after an unknown command: %v", err)
	}
}

// readReply reads one RESP2 reply, arrays flattened into lines.
func readReply(t *testing.T, rc *resptest.Conn) []string {
	t.Helper()
	l, err := rc.R.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	l = strings.TrimSuffix(l, "\r\n")
	switch {
	case strings.HasPrefix(l, "*") && l != "*-1":
		n, _ := strconv.Atoi(l[1:])
		out := []string{l}
		for range n {
			out = append(out, readReply(t, rc)...)
		}
		return out
	case strings.HasPrefix(l, "$") && l != "$-1":
		b, err := rc.R.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return []string{strings.TrimSuffix(b, "\r\n")}
	}
	return []string{l}
}

// TestQuitAndReset: QUIT answers OK and closes; RESET answers RESET,
// drops the name and releases the connection's KEEPALIVE lock.
func TestQuitAndReset(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	rc := resptest.Dial(t, in.Addr)
	if l := rc.Line("CLIENT", "SETNAME", "n"); l != "+OK" {
		t.Fatalf("CLIENT SETNAME = %q", l)
	}
	rc.Send("LOCK", "kl", "10000", "KEEPALIVE")
	if r := readReply(t, rc); len(r) != 3 || r[0] != "*2" {
		t.Fatalf("LOCK KEEPALIVE = %q", r)
	}
	if v, err := c.Get(ctxT(t), "kl").Result(); err != nil || v == "" {
		t.Fatalf("GET of the KEEPALIVE lock = %q, %v", v, err)
	}
	if l := rc.Line("RESET"); l != "+RESET" {
		t.Fatalf("RESET = %q", l)
	}
	if l := rc.Line("CLIENT", "GETNAME"); l != "$-1" {
		t.Fatalf("CLIENT GETNAME after RESET = %q, want null", l)
	}
	pollFor(t, "RESET to release the KEEPALIVE lock", func() bool {
		return redlocktest.Count(in.BackendValues(t, "kl"), "<nil>") == 3
	})
	if l := rc.Line("QUIT"); l != "+OK" {
		t.Fatalf("QUIT = %q", l)
	}
	if b, err := rc.R.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after QUIT read %q, %v; want EOF", b, err)
	}
}

// TestLockInfoShape checks LOCKINFO's fields in RESP2 and RESP3.
func TestLockInfoShape(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c2 := in.Client(t, 2)
	tok, _ := lock(t, c2, "li", 10000)
	flat, err := c2.Do(ctxT(t), "LOCKINFO", "li").Slice()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"key", "verdict", "token", "pttl", "quorum", "answered", "fence", "holds", "backends"}
	if len(flat) != 2*len(names) {
		t.Fatalf("LOCKINFO RESP2 = %v; want %d name/value pairs", flat, len(names))
	}
	m := map[string]any{}
	for i, n := range names {
		if flat[2*i] != n {
			t.Fatalf("LOCKINFO field %d = %v, want %q", i, flat[2*i], n)
		}
		m[n] = flat[2*i+1]
	}
	if m["key"] != "li" || m["verdict"] != "held" || m["token"] != tok || m["quorum"] != int64(2) ||
		m["answered"] != int64(3) || m["fence"] != nil || m["holds"] != nil {
		t.Fatalf("LOCKINFO = %v", m)
	}
	if p, ok := m["pttl"].(int64); !ok || p <= 0 || p > 10000 {
		t.Fatalf("LOCKINFO pttl = %v", m["pttl"])
	}
	bs, ok := m["backends"].([]any)
	if !ok || len(bs) != 3 {
		t.Fatalf("LOCKINFO backends = %v", m["backends"])
	}
	for i, b := range bs {
		f, _ := b.([]any)
		got := fmt.Sprint(f)
		if len(f) < 8 || f[0] != "backend" || f[1] != in.Backends[i].Addr() || f[2] != "token" || f[3] != tok ||
			f[4] != "pttl" || f[6] != "error" || f[7] != nil {
			t.Fatalf("LOCKINFO backend %d = %s", i, got)
		}
	}
	c3 := in.Client(t, 3)
	res, err := c3.Do(ctxT(t), "LOCKINFO", "free").Result()
	m3, ok := res.(map[any]any)
	if err != nil || !ok || m3["verdict"] != "not held" || m3["token"] != nil || m3["pttl"] != int64(-2) {
		t.Fatalf("LOCKINFO of a free key in RESP3 = %#v, %v", res, err)
	}
}

// TestNoteDecisions checks the decisions the issues left open: EXISTS
// counts repeated keys as Redis does, IFEQ without XX, IFEQ with another
// value handing the lock over (as Redis 8.4), EXPIRE's NX|XX|GT|LT refused, the version
// HELLO reports, and a holder's repeated SET NX PX keeping its lock.
func TestNoteDecisions(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	tok, _ := lock(t, c, "n", 10000)
	if n, err := c.Exists(ctx, "n", "n").Result(); err != nil || n != 2 {
		t.Errorf("EXISTS n n = %d, %v; want 2 as Redis counts repeats", n, err)
	}
	if s, err := c.Do(ctx, "SET", "n", tok, "PX", 20000, "IFEQ", tok).Text(); err != nil || s != "OK" {
		t.Errorf("SET PX IFEQ without XX = %q, %v; want OK", s, err)
	}
	if s, err := c.Do(ctx, "SET", "n", "new", "PX", 20000, "IFEQ", tok).Text(); err != nil || s != "OK" {
		t.Errorf("SET IFEQ with a different value = %q, %v; want OK (a hand-over)", s, err)
	}
	if v := in.BackendValues(t, "n"); redlocktest.Count(v, "new") != 3 {
		t.Errorf("after the hand-over the backends hold %v", v)
	}
	for _, opt := range []string{"NX", "XX", "GT", "LT"} {
		_, err := c.Do(ctx, "EXPIRE", "n", 5, opt).Result()
		wantErr(t, "EXPIRE … "+opt, err, "ERR redlockd does not support this form of 'expire': "+opt+" is not supported")
	}
	hello, err := c.Do(ctx, "HELLO", 2).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(hello) < 4 || hello[2] != "version" || hello[3] != "7.2.0" {
		t.Errorf("HELLO 2 = %v; want version 7.2.0", hello)
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil || !strings.Contains(info, "redis_version:7.2.0\r\n") || !strings.Contains(info, "redlockd_version:") {
		t.Errorf("INFO server = %q, %v; want redis_version:7.2.0 and redlockd_version", info, err)
	}
	if ok, err := c.SetNX(ctx, "r", "mine", 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX PX = %v, %v", ok, err)
	}
	if ok, err := c.SetNX(ctx, "r", "mine", 10*time.Second).Result(); err != nil || ok {
		t.Fatalf("repeated SET NX PX by the holder = %v, %v; want null", ok, err)
	}
	if v := in.BackendValues(t, "r"); redlocktest.Count(v, "mine") != 3 {
		t.Fatalf("after a repeated SET NX PX the backends hold %v; want the lock kept", v)
	}
}

// TestSessionLockTTLOnOtherProxy: a session lock answers -1 only on the
// proxy that holds it; another proxy over the same backends shows the
// backend ttl.
func TestSessionLockTTLOnOtherProxy(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{})
	ca, cb := a.Client(t, 2), b.Client(t, 2)
	ctx := ctxT(t)
	if s, err := ca.Do(ctx, "SET", "s", "tok", "NX").Text(); err != nil || s != "OK" {
		t.Fatalf("SET NX = %q, %v", s, err)
	}
	if p, err := ca.Do(ctx, "PTTL", "s").Int(); err != nil || p != -1 {
		t.Fatalf("PTTL on the holding proxy = %d, %v; want -1", p, err)
	}
	if p, err := cb.Do(ctx, "PTTL", "s").Int(); err != nil || p <= 0 || p > 30000 {
		t.Fatalf("PTTL on another proxy = %d, %v; want the backend ttl (session ttl 30 s)", p, err)
	}
}

// TestMaxClients: one connection over the limit gets Redis's error and is
// closed; a slot frees when a client leaves.
func TestMaxClients(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Proxy: proxy.Options{MaxClients: 1}})
	first := resptest.Dial(t, in.Addr)
	if l := first.Line("PING"); l != "+PONG" {
		t.Fatalf("PING = %q", l)
	}
	second := resptest.Dial(t, in.Addr)
	if l, err := second.R.ReadString('\n'); err != nil || l != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second client read %q, %v", l, err)
	}
	if _, err := second.R.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("second client after the refusal: %v, want EOF", err)
	}
	if l := first.Line("QUIT"); l != "+OK" {
		t.Fatalf("QUIT = %q", l)
	}
	pollFor(t, "a slot to free after QUIT", func() bool {
		c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, MaxRetries: -1})
		defer c.Close()
		return c.Ping(ctxT(t)).Err() == nil
	})
}
