package compat

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// python is Debian's interpreter, which sees Debian's python3-redis; the
// python3 first on PATH may be another one.
const python = "/usr/bin/python3"

// TestRedisPy runs redis-py's Lock (Debian's python3-redis 4.3.4) through
// compat/python/lock_test.py: acquire, extend, reacquire, release, refusal,
// blocking with a timeout, the context manager and timeout=None.
func TestRedisPy(t *testing.T) {
	py := lookTool(t, python, "apt-get install python3-redis")
	in := startRedlockd(t)
	for _, tc := range []struct {
		group string
		want  []string
	}{
		{"basic", []string{"ok acquire", "ok second-lock-refused", "ok extend", "ok reacquire",
			"ok release", "ok not-owner-refused"}},
		{"blocking", []string{"ok blocking-timeout", "ok blocking-acquire"}},
		{"context-manager", []string{"ok context-manager"}},
		{"timeout-none", []string{"ok timeout-none"}},
	} {
		t.Run(tc.group, func(t *testing.T) {
			out := runTool(t, testCtx(t), "python", in.Addr, py, "lock_test.py", "suite", tc.group)
			wantLines(t, out, append(tc.want, "PASS")...)
		})
	}
}

// TestRedisPyKilledHolder takes a redis-py lock with timeout=None (SET NX
// without expiry: a session lock) in a child process. While the child
// lives, the lock stays held past several session ttls (the proxy renews
// it). Once the child is SIGKILLed, the lock is free as soon as the proxy
// sees the connection close: behind a proxy whose session ttl is far
// longer than the bound the test allows, so that the ttl cannot free it
// first.
func TestRedisPyKilledHolder(t *testing.T) {
	py := lookTool(t, python, "apt-get install python3-redis")
	const name = "py:killed"
	t.Run("renewed while the holder lives", func(t *testing.T) {
		in := startRedlockd(t)
		ctx := testCtx(t)
		token, kill := pyHolder(t, py, in, name)
		c := in.Client(t, 2)
		if got, err := c.Get(ctx, name).Result(); err != nil || got != token {
			t.Fatalf("GET while held = %q, %v; want %q", got, err, token)
		}
		// The proxy never stores a value without a ttl on a backend.
		for i, s := range in.Backends {
			if d, err := s.Client().PTTL(ctx, name).Result(); err != nil || d <= 0 || d > sessionTTL {
				t.Errorf("backend %d: PTTL = %v, %v; want in (0, %v]", i, d, err, sessionTTL)
			}
		}
		// Held for as long as the holder lives: past several session ttls
		// (this is time passing under test, not a wait for an event).
		time.Sleep(3 * sessionTTL)
		if got, err := c.Get(ctx, name).Result(); err != nil || got != token {
			t.Fatalf("GET after %v = %q, %v; want %q (the session lock was not renewed)", 3*sessionTTL, got, err, token)
		}
		kill()
		waitFree(t, c, name, 3*sessionTTL+5*time.Second)
	})
	t.Run("freed when the holder's connection closes", func(t *testing.T) {
		// The session ttl is slow on purpose: a lock free within a third
		// of it was released because the connection closed.
		const slowSessionTTL = time.Minute
		opts := harnessOptions
		opts.Commands.SessionTTL = slowSessionTTL
		in := &instance{redlocktest.Start(t, opts)}
		_, kill := pyHolder(t, py, in, name)
		c := in.Client(t, 2)
		killed := time.Now()
		kill()
		waitFree(t, c, name, slowSessionTTL/3)
		if n := redlocktest.Count(in.BackendValues(t, name), "<nil>"); n != 3 {
			t.Errorf("after release the key is absent on %d backends, want 3", n)
		}
		t.Logf("lock free %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
	})
}

// pyHolder takes the session lock name through in in a redis-py child
// process, and returns its token and a func that SIGKILLs the child (no
// clean-up in the client) and reaps it. The test's end kills it too.
func pyHolder(t *testing.T, py string, in *instance, name string) (string, func()) {
	t.Helper()
	cmd := childproc.CommandContext(testCtx(t), py, "lock_test.py", "hold", name)
	cmd.Dir = "python"
	cmd.Env = append(cmd.Environ(), "REDLOCKD_ADDR="+in.Addr)
	stdin, err := cmd.StdinPipe() // kept open: the child holds until killed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	token, held := strings.CutPrefix(strings.TrimSpace(line), "HELD ")
	if err != nil || !held {
		kill()
		t.Fatalf("child did not take the lock: %q, %v\n%s", line, err, stderr.String())
	}
	return token, kill
}

// waitFree polls GET until the lock is free, failing after bound.
func waitFree(t *testing.T, c *redis.Client, name string, bound time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		err := c.Get(ctx, name).Err()
		if errors.Is(err, redis.Nil) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lock %q still held %v after its holder died (last GET: %v)", name, bound, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
