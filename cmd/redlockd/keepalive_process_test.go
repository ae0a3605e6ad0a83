package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/redistest"
)

// A KEEPALIVE lock lives as long as its connection, and no longer than its
// ttl past the proxy process: these tests run the real binary as a child
// process, so that it can be killed.

type kaProcess struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startProcess builds and runs redlockd over servers, returning once it
// logged its address.
func kaStartProcess(t *testing.T, bin string, servers []*redistest.Server) *kaProcess {
	t.Helper()
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--backends", strings.Join(addrs, ","), "--node-timeout", "200ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &kaProcess{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		kaReadyLine(stderr, ready)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.addr = <-ready:
	case <-p.done:
		t.Fatal("redlockd exited before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("redlockd not ready within 30s")
	}
	return p
}

// readyLine sends the address of the "ready" log line, then drains rd.
func kaReadyLine(rd interface{ Read([]byte) (int, error) }, ready chan<- string) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil && e["msg"] == "ready to accept connections" {
			addr, _ := e["addr"].(string)
			ready <- addr
		}
	}
}

func kaBuild(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "redlockd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// holders counts the servers that store token at key.
func kaHolders(t *testing.T, servers []*redistest.Server, key, token string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := s.Client().Get(ctx, key).Result()
		cancel()
		if err == nil && v == token {
			n++
		}
	}
	return n
}

func kaLock(t *testing.T, addr, key string, ttlMs string) (*redis.Client, string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	res, err := c.Do(context.Background(), "LOCK", key, ttlMs, "KEEPALIVE").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK KEEPALIVE = %v, %v", res, err)
	}
	return c, res[0].(string)
}

func kaWaitUntil(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func TestKeepaliveAcrossProxyProcessDeath(t *testing.T) {
	servers := redistest.StartN(t, 3)
	bin := kaBuild(t)

	t.Run("SIGKILL frees it after its ttl", func(t *testing.T) {
		p := kaStartProcess(t, bin, servers)
		_, tok := kaLock(t, p.addr, "killed", "500")
		end := time.Now().Add(1500 * time.Millisecond) // three ttls
		for time.Now().Before(end) {
			if n := kaHolders(t, servers, "killed", tok); n < 2 {
				t.Fatalf("kept lock held on %d backends", n)
			}
			time.Sleep(50 * time.Millisecond) // pacing the checks
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		if n := kaHolders(t, servers, "killed", tok); n < 2 {
			t.Fatalf("lock gone at once after SIGKILL (%d holders): nothing could have released it", n)
		}
		kaWaitUntil(t, 3*time.Second, "lock expired after the proxy died", func() bool {
			return kaHolders(t, servers, "killed", tok) == 0
		})
	})

	t.Run("graceful shutdown releases it at once", func(t *testing.T) {
		p := kaStartProcess(t, bin, servers)
		_, tok := kaLock(t, p.addr, "stopped", "10000")
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if n := kaHolders(t, servers, "stopped", tok); n != 0 {
			t.Fatalf("lock still on %d backends after a graceful shutdown (ttl 10s)", n)
		}
	})
}
