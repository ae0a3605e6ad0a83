package backend

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMain(m *testing.M) {
	// A pool whose server died keeps a dialing goroutine (with a sleep on
	// top of it) until the client is closed.
	leaktest.VerifyTestMain(m)
}

func newTestRedis(t *testing.T, addr string) *Redis {
	t.Helper()
	r, err := NewRedis(addr, RedisOptions{})
	if err != nil {
		t.Fatalf("NewRedis(%q): %v", addr, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// pttlBetween checks a remaining ttl against what was set, allowing for the
// time the test itself took.
func pttlBetween(t *testing.T, what string, got, lo, hi time.Duration) {
	t.Helper()
	if got < lo || got > hi {
		t.Fatalf("%s pttl = %v, want in [%v, %v]", what, got, lo, hi)
	}
}

func TestRedisTTLs(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	ctx := t.Context()
	if ok, err := nodetest.SetNX(ctx, r, "k", "a", 10*time.Second); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	_, pttl, _, err := nodetest.Get(ctx, r, "k")
	if err != nil {
		t.Fatal(err)
	}
	pttlBetween(t, "after SetNX", pttl, 9*time.Second, 10*time.Second)

	if ok, err := nodetest.CompareAndExtend(ctx, r, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("CompareAndExtend = %v, %v", ok, err)
	}
	got := srv.Client().PTTL(ctx, "k").Val()
	pttlBetween(t, "after CompareAndExtend (server view)", got, 59*time.Second, time.Minute)

	if ok, err := nodetest.Expire(ctx, r, "k", 5*time.Second); !ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	pttlBetween(t, "after Expire (server view)", srv.Client().PTTL(ctx, "k").Val(), 4*time.Second, 5*time.Second)

	if err := nodetest.Set(ctx, r, "k", "b", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	pttlBetween(t, "after Set (server view)", srv.Client().PTTL(ctx, "k").Val(), 19*time.Second, 20*time.Second)
}

func TestRedisGetWithoutExpiry(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := srv.Client().Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tok, pttl, ok, err := nodetest.Get(t.Context(), r, "k")
	if err != nil || !ok || tok != "v" || pttl != -time.Millisecond {
		t.Fatalf("Get = %q, %v, %v, %v; want v, -1ms, true, nil", tok, pttl, ok, err)
	}
}

func TestRedisSubMillisecondTTLRoundsUp(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	// PX 0 would be a server error; 1ns must become PX 1.
	if ok, err := nodetest.SetNX(t.Context(), r, "k", "a", time.Nanosecond); !ok || err != nil {
		t.Fatalf("SetNX(1ns) = %v, %v", ok, err)
	}
	if _, err := nodetest.SetNX(t.Context(), r, "k2", "a", 0); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("SetNX(0) err = %v, want ErrInvalidTTL", err)
	}
}

func TestRedisScriptsSurviveScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	ctx := t.Context()
	if ok, err := nodetest.SetNX(ctx, r, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	// EVALSHA meets NOSCRIPT after a flush (or a restart); Run falls back
	// to EVAL.
	if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := nodetest.CompareAndExtend(ctx, r, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("CompareAndExtend after SCRIPT FLUSH = %v, %v", ok, err)
	}
	if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := nodetest.CompareAndDelete(ctx, r, "k", "a", false); !ok || err != nil {
		t.Fatalf("CompareAndDelete after SCRIPT FLUSH = %v, %v", ok, err)
	}
}

func TestRedisCompareAndDeleteScriptText(t *testing.T) {
	const body = `local v = redis.call("get",KEYS[1])
if v == ARGV[1] then return redis.call("del",KEYS[1]) end
if v then return 0 end
return -1`
	sum := sha1.Sum([]byte(body))
	if got, want := compareAndDeleteScript.sha, hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("compare-and-delete script SHA1 = %s, want %s (the body must stay exact)", got, want)
	}
}

func TestRedisURLWithPasswordAndDB(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "pw")
	ctx := t.Context()
	r := newTestRedis(t, fmt.Sprintf("redis://:pw@%s/2", srv.Addr()))
	if got, want := r.Name(), srv.Addr()+"/2"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
	if ok, err := nodetest.SetNX(ctx, r, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	// The key must be in db 2 and only there.
	if n, err := srv.Client().Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("key found in db 0 (read: %v)", err)
	}
	db2 := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "pw", DB: 2, DisableIdentity: true})
	defer db2.Close()
	if got := db2.Get(ctx, "k").Val(); got != "a" {
		t.Fatalf("db 2 holds %q, want a", got)
	}
}

func TestRedisAuthFailuresAreErrors(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "pw")
	for _, addr := range []string{
		srv.Addr(), // no password: NOAUTH
		fmt.Sprintf("redis://:wrong@%s", srv.Addr()),
	} {
		r := newTestRedis(t, addr)
		ok, err := nodetest.SetNX(t.Context(), r, "k", "a", time.Minute)
		if err == nil || ok {
			t.Fatalf("SetNX via %s = %v, %v; want an error", r.Name(), ok, err)
		}
		if strings.Contains(err.Error(), "wrong@") {
			t.Fatalf("error leaks the URL: %v", err)
		}
	}
}

func TestRedisErrorRepliesAreErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, srv *redistest.Server)
		want  string
	}{
		{"OOM", func(t *testing.T, srv *redistest.Server) {
			c := srv.Client()
			if err := c.ConfigSet(t.Context(), "maxmemory-policy", "noeviction").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}, "OOM"},
		{"READONLY", func(t *testing.T, srv *redistest.Server) {
			primary := redistest.Start(t)
			host, port, _ := strings.Cut(primary.Addr(), ":")
			if err := srv.Client().ReplicaOf(t.Context(), host, port).Err(); err != nil {
				t.Fatal(err)
			}
		}, "READONLY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			r := newTestRedis(t, srv.Addr())
			tc.setup(t, srv)
			ok, err := nodetest.SetNX(t.Context(), r, "k", "a", time.Minute)
			if ok || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetNX = %v, %v; want a %s error", ok, err, tc.want)
			}
			var rerr ServerError
			if !errors.As(err, &rerr) || rerr.Code != tc.want {
				t.Fatalf("error %v does not unwrap to a ServerError of code %s", err, tc.want)
			}
			if err := nodetest.Set(t.Context(), r, "k", "a", time.Minute); err == nil {
				t.Fatal("Set succeeded")
			}
		})
	}
}

func TestRedisStalledBackendTimesOut(t *testing.T) {
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			srv := redistest.Start(t)
			r := newTestRedis(t, srv.Addr())
			if warm {
				if _, err := nodetest.SetNX(t.Context(), r, "warm", "a", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			srv.Stop()
			stopped := true
			defer func() {
				if stopped {
					srv.Cont()
				}
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			ok, err := nodetest.SetNX(ctx, r, "k", "a", time.Minute)
			elapsed := time.Since(start)
			if err == nil || ok {
				t.Fatalf("SetNX on a stopped server = %v, %v; want an error", ok, err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v; want it to wrap context.DeadlineExceeded", err)
			}
			// The server stays stopped: a call that ignored its ctx would
			// wait at least for the node's own budget for calls without a
			// deadline (noDeadlineBudget), so half of that is a wide margin.
			if elapsed > wire.NoDeadlineBudget/2 {
				t.Fatalf("SetNX took %v with a 50ms deadline", elapsed)
			}
			srv.Cont()
			stopped = false
			// The node recovers, and a late reply on the timed-out
			// connection is not mistaken for the next command's.
			if ok, err := nodetest.SetNX(t.Context(), r, "k2", "b", time.Minute); !ok || err != nil {
				t.Fatalf("SetNX after SIGCONT = %v, %v", ok, err)
			}
			if tok, _, ok, err := nodetest.Get(t.Context(), r, "k2"); tok != "b" || !ok || err != nil {
				t.Fatalf("Get after SIGCONT = %q, %v, %v", tok, ok, err)
			}
		})
	}
}

func TestRedisDeadBackendFailsFast(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if ok, err := nodetest.SetNX(ctx, r, "k", "a", time.Minute); ok || err == nil {
		t.Fatalf("SetNX on a dead server = %v, %v; want an error", ok, err)
	}
}

func TestRedisRestartChangesRunID(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	before, err := lookRunID(r)
	if err != nil || len(before) != 40 {
		t.Fatalf("RunID = %q, %v", before, err)
	}
	if ok, err := nodetest.SetNX(t.Context(), r, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	srv.Restart(t)
	// The pool's connections died with the old process; the first call may
	// see that, so allow one failure.
	after, err := lookRunID(r)
	if err != nil {
		after, err = lookRunID(r)
	}
	if err != nil || after == before {
		t.Fatalf("RunID after restart = %q, %v; before %q", after, err, before)
	}
	if _, _, ok, err := nodetest.Get(t.Context(), r, "k"); ok || err != nil {
		t.Fatalf("Get after restart = %v, %v; want the key lost", ok, err)
	}
}

// lookRunID is the run_id a look at r's server finds, as its watcher
// takes it.
func lookRunID(r *Redis) (string, error) {
	in := r.watch.probe()
	return in.RunID, in.Err
}

// lookRole is the role ("master" or "slave") and replica count a look at
// r's server finds, as its watcher takes it.
func lookRole(r *Redis) (string, int, error) {
	in := r.watch.probe()
	if in.Err != nil {
		return "", 0, in.Err
	}
	if in.Replica {
		return "slave", in.Replicas, nil
	}
	return "master", in.Replicas, nil
}

func TestRedisRole(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	p := newTestRedis(t, primary.Addr())
	rp := newTestRedis(t, replica.Addr())
	if role, n, err := lookRole(p); role != "master" || n != 0 || err != nil {
		t.Fatalf("Role = %q, %d, %v; want master, 0", role, n, err)
	}
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := replica.Client().ReplicaOf(t.Context(), host, port).Err(); err != nil {
		t.Fatal(err)
	}
	if role, _, err := lookRole(rp); role != "slave" || err != nil {
		t.Fatalf("replica Role = %q, %v; want slave", role, err)
	}
	// The replica connects in the background: poll the external process.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, n, err := lookRole(p)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connected_slaves = %d after 5s, want 1", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedisInfo(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	text, err := r.watch.info(t.Context(), "info", "server")
	if err != nil || !strings.Contains(text, "redis_version:") {
		t.Fatalf("Info(server) = %.80q, %v", text, err)
	}
	if text, err = r.watch.info(t.Context(), "info"); err != nil || !strings.Contains(text, "# Memory") {
		t.Fatalf("Info() = %.80q, %v", text, err)
	}
}

func TestNewRedisAddresses(t *testing.T) {
	tests := []struct {
		addr     string
		wantName string
		wantTLS  bool
		wantErr  bool
	}{
		{addr: "127.0.0.1:6379", wantName: "127.0.0.1:6379"},
		{addr: "redis://127.0.0.1:6380", wantName: "127.0.0.1:6380"},
		{addr: "redis://user:secret@h:6381/3", wantName: "h:6381/3"},
		{addr: "rediss://h:6382", wantName: "h:6382", wantTLS: true},
		{addr: "localhost", wantErr: true},
		{addr: "redis://:secret@h:1/abc", wantErr: true},
		{addr: "unix:///tmp/redis.sock", wantErr: true},
		{addr: "http://h:1", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			// No idle refill: these hosts need not resolve.
			r, err := NewRedis(tc.addr, RedisOptions{})
			if tc.wantErr {
				if err == nil {
					r.Close()
					t.Fatal("no error")
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error leaks the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Name() != tc.wantName {
				t.Fatalf("Name() = %q, want %q", r.Name(), tc.wantName)
			}
			if got := r.watch.health.cfg.TLSConfig != nil; got != tc.wantTLS {
				t.Fatalf("TLS = %v, want %v", got, tc.wantTLS)
			}
		})
	}
}

func TestNewRedisOptions(t *testing.T) {
	custom := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	r, err := NewRedis("rediss://tls.example:6390/1", RedisOptions{Name: "n1", TLSConfig: custom})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The node has no go-redis client (and no pool): every connection is
	// opened from these settings.
	o := r.watch.health.cfg
	switch {
	case r.Name() != "n1":
		t.Errorf("Name() = %q", r.Name())
	case o.TLSConfig == custom:
		t.Errorf("TLSConfig not cloned")
	case !o.TLSConfig.InsecureSkipVerify || o.TLSConfig.ServerName != "tls.example":
		t.Errorf("TLSConfig = %+v; want InsecureSkipVerify and ServerName from the URL", o.TLSConfig)
	case r.mux.Conns() != defaultConns || o.Timeout != time.Second:
		t.Errorf("%d lines, dial timeout %v", r.mux.Conns(), o.Timeout)
	case o.DB != 1 || len(o.Handshake) != 1 || o.Handshake[0][0] != "select":
		t.Errorf("DB %d, handshake %q", o.DB, o.Handshake)
	}
}

func TestRedisCloseTwice(t *testing.T) {
	r, err := NewRedis("127.0.0.1:1", RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
