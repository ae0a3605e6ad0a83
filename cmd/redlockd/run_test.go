package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMain(m *testing.M) {
	// A go-redis pool may keep dialing a backend that is down; that
	// goroutine sleeps between attempts (see REFERENCE.md).
	leaktest.VerifyTestMain(m)
}

// running is one run() in the background, with its JSON log readable.
type running struct {
	addr   string
	cancel context.CancelFunc
	exit   chan int
	mu     sync.Mutex
	logs   []map[string]any
}

// start runs the binary with args (plus JSON logs on a free port) and
// returns once it logged that it is ready, reading the bound address from
// that log line.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{cancel: cancel, exit: make(chan int, 1)}
	args = append([]string{"--listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	go func() {
		code := run(ctx, args, envOf(nil), io.Discard, pw)
		pw.Close()
		r.exit <- code
	}()
	ready := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		r.scan(pr, ready)
	}()
	t.Cleanup(func() {
		cancel()
		<-scanned
	})
	select {
	case r.addr = <-ready:
	case code := <-r.exit:
		t.Fatalf("run exited %d before it was ready; logs: %v", code, r.entries())
	}
	return r
}

func (r *running) scan(rd io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		r.mu.Lock()
		r.logs = append(r.logs, e)
		r.mu.Unlock()
		if e["msg"] == "ready to accept connections" {
			ready <- e["addr"].(string)
		}
	}
	io.Copy(io.Discard, rd)
}

func (r *running) entries() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.logs...)
}

// logged reports whether a line at level contains msg.
func (r *running) logged(level, msg string) bool {
	for _, e := range r.entries() {
		if e["level"] == level && strings.Contains(e["msg"].(string), msg) {
			return true
		}
	}
	return false
}

// stop cancels run's context, as SIGTERM does, and returns its exit code.
func (r *running) stop() int {
	r.cancel()
	return <-r.exit
}

func (r *running) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func lockOnce(t *testing.T, c *redis.Client, key string) []any {
	t.Helper()
	res, err := c.Do(context.Background(), "LOCK", key, "1000").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK %s = %v, %v", key, res, err)
	}
	return res
}

func TestRunEmbeddedServesAndStops(t *testing.T) {
	r := start(t)
	if !r.logged("WARN", "embedded mode: no fault tolerance, for trying it out") {
		t.Error("embedded mode was not logged as a warning")
	}
	c := r.client(t)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	lockOnce(t, c, "k")
	if err := c.Do(context.Background(), "LOCK", "k", "1000").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("second LOCK = %v, want nil", err)
	}
	if code := r.stop(); code != 0 {
		t.Fatalf("exit %d after cancel, want 0", code)
	}
	if !r.logged("INFO", "shutting down") {
		t.Error("shutdown was not logged")
	}
}

// slowMachine is the node timeout of the tests that lock through real
// backends: the first LOCK dials each backend and looks at the server
// within it, which the default 50ms does not leave room for on a loaded
// machine. These tests are about start-up, not latency.
var slowMachine = []string{"--node-timeout", "1s"}

func TestRunRealBackends(t *testing.T) {
	servers := redistest.StartN(t, 3)
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	r := start(t, append([]string{"--backends", strings.Join(addrs, ",")}, slowMachine...)...)
	tok, _ := lockOnce(t, r.client(t), "real")[0].(string)
	// LOCK answers once a majority stored the token; the last SET may still
	// be on its way, bounded by the node timeout.
	for _, s := range servers {
		var v string
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if v, err = s.Client().Get(context.Background(), "real").Result(); err == nil && v == tok {
				break
			}
		}
		if err != nil || v != tok {
			t.Errorf("backend %s: GET real = %q, %v; want the token %q", s.Addr(), v, err, tok)
		}
	}
	if code := r.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A backend that is down at start-up is logged, not fatal: two of three
// still make a quorum.
func TestRunBackendDownAtStartup(t *testing.T) {
	servers := redistest.StartN(t, 3)
	servers[2].Kill()
	addrs := []string{servers[0].Addr(), servers[1].Addr(), servers[2].Addr()}
	r := start(t, append([]string{"--backends", strings.Join(addrs, ",")}, slowMachine...)...)
	if !r.logged("WARN", "backend unreachable at start-up") {
		t.Error("the down backend was not logged")
	}
	lockOnce(t, r.client(t), "k")
	if code := r.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestRunRefusesDependentBackends(t *testing.T) {
	s := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strings.TrimPrefix(s.Addr(), "127.0.0.1:"))
	other := redistest.Start(t)
	tests := []struct {
		name     string
		backends []string
		want     string
	}{
		// Two names of one server: only its run_id tells (the same
		// host:port twice is refused while parsing, see TestConfigErrors).
		{"same server twice", []string{s.Addr(), "redis://localhost:" + strings.TrimPrefix(s.Addr(), "127.0.0.1:") + "/0", other.Addr()}, "are the same server"},
		{"a replica", []string{s.Addr(), replica.Addr(), other.Addr()}, "not an independent master"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			code := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--log-level", "error", "--backends", strings.Join(tt.backends, ",")},
				envOf(nil), io.Discard, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q", code, stderr.String(), tt.want)
			}
		})
	}
}
