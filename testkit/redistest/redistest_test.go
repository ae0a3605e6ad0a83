package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func pingWithin(s *Server, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Client().Ping(ctx).Err()
}

func TestStartNDistinctPorts(t *testing.T) {
	servers := StartN(t, 3)
	seen := map[int]bool{}
	for _, s := range servers {
		if seen[s.Port()] {
			t.Fatalf("port %d used twice", s.Port())
		}
		seen[s.Port()] = true
		if err := pingWithin(s, time.Second); err != nil {
			t.Fatalf("PING %s: %v\n%s", s.Addr(), err, s.Output())
		}
	}
}

func TestStopCont(t *testing.T) {
	s := Start(t)
	s.Stop()
	if err := pingWithin(s, 50*time.Millisecond); err == nil {
		t.Fatal("a stopped server answered PING")
	}
	s.Cont()
	if err := pingWithin(s, time.Second); err != nil {
		t.Fatalf("PING after Cont: %v", err)
	}
}

func TestKillRestart(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	if err := s.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	s.Kill() // a second Kill is a no-op
	if err := pingWithin(s, 100*time.Millisecond); err == nil {
		t.Fatal("a killed server answered PING")
	}
	s.Restart(t)
	// The pooled connection died with the old process; one failure is fine.
	n, err := s.Client().Exists(ctx, "k").Result()
	if err != nil {
		n, err = s.Client().Exists(ctx, "k").Result()
	}
	if err != nil || n != 0 {
		t.Fatalf("EXISTS after restart = %d, %v; want the key lost", n, err)
	}
}

func TestRequirePassClient(t *testing.T) {
	s := Start(t, "--requirepass", "pw")
	if err := pingWithin(s, time.Second); err != nil {
		t.Fatalf("PING with password: %v", err)
	}
}

func TestExtraArgsApplied(t *testing.T) {
	s := Start(t, "--maxmemory", "12345678")
	got, err := s.Client().ConfigGet(t.Context(), "maxmemory").Result()
	if err != nil || got["maxmemory"] != "12345678" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v", got, err)
	}
}
