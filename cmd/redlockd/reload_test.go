package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/testcerts"
)

func authErr(addr, pass string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pass, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// TestSIGHUPReloads: SIGHUP reads the config file again and applies the
// log level and the password at once, logs what it reloaded and what
// needs a restart, survives a file that no longer loads, and never ends
// the process.
func TestSIGHUPReloads(t *testing.T) {
	bin := redlocktest.Build(t, "./cmd/redlockd")
	file := filepath.Join(t.TempDir(), "redlockd.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("log-level: info\nrequirepass: first\n")
	c := redlocktest.StartBinary(t, bin, "--config", file)
	ready, next := c.WaitLog(t, 0, "ready to accept connections")
	addr := ready["addr"].(string)
	if err := authErr(addr, "first"); err != nil {
		t.Fatalf("AUTH first: %v", err)
	}
	// One connection, authenticated before the reload and never redialled
	// (a redial would send the old password and fail).
	kept := redis.NewClient(&redis.Options{Addr: addr, Password: "first", Protocol: 2, DisableIdentity: true,
		PoolSize: 1, MaxRetries: -1, ConnMaxIdleTime: -1})
	defer kept.Close()
	if err := kept.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING before the reload: %v", err)
	}

	write("log-level: debug\nrequirepass: second\nmax-ttl: 1h\n")
	c.Send(t, syscall.SIGHUP)
	e, next := c.WaitLog(t, next, "SIGHUP: configuration reloaded")
	if err := kept.Ping(context.Background()).Err(); err != nil {
		t.Errorf("a connection authenticated before the reload: PING = %v, want it to stay authenticated", err)
	}
	if got := strings.Join(strs(e["reloaded"]), ","); got != "log-level,requirepass" {
		t.Errorf("reloaded %q, want log-level,requirepass", got)
	}
	if err := authErr(addr, "second"); err != nil {
		t.Errorf("AUTH with the new password: %v", err)
	}
	if err := authErr(addr, "first"); err == nil {
		t.Error("the old password still works after the reload")
	}
	// A debug line shows that the level changed: a round's per-node outcome.
	if err := authErr(addr, "second"); err != nil {
		t.Fatal(err)
	}
	cl := redis.NewClient(&redis.Options{Addr: addr, Password: "second", Protocol: 2, DisableIdentity: true})
	defer cl.Close()
	if err := cl.Do(context.Background(), "LOCK", "hup", "1000").Err(); err != nil {
		t.Fatal(err)
	}
	c.WaitLog(t, next, "backend answered")

	write("log-level: [\n")
	c.Send(t, syscall.SIGHUP)
	_, next = c.WaitLog(t, next, "SIGHUP: configuration not reloaded")
	write("log-level: debug\nrequirepass: second\nmax-ttl: 2h\n")
	c.Send(t, syscall.SIGHUP)
	e, _ = c.WaitLog(t, next, "take effect only at a restart")
	if got := strings.Join(strs(e["settings"]), ","); got != "max-ttl" {
		t.Errorf("restart-only settings %q, want max-ttl", got)
	}
	if err := authErr(addr, "second"); err != nil {
		t.Errorf("after three SIGHUPs: %v", err)
	}
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestSIGHUPReloadsCertificates: new listener certificates in the same
// files serve new connections after SIGHUP.
func TestSIGHUPReloadsCertificates(t *testing.T) {
	bin := redlocktest.Build(t, "./cmd/redlockd")
	oldCA, newCA := testcerts.New(t), testcerts.New(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	install := func(s *testcerts.Set) {
		t.Helper()
		for from, to := range map[string]string{s.ServerCert: cert, s.ServerKey: key} {
			data, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(oldCA)
	c := redlocktest.StartBinary(t, bin, "--tls-cert-file", cert, "--tls-key-file", key)
	ready, next := c.WaitLog(t, 0, "ready to accept connections")
	addr := ready["addr"].(string)
	if err := pingErr(tlsClient(t, addr, oldCA.ClientTLSNoCert())); err != nil {
		t.Fatalf("before the reload: %v", err)
	}
	install(newCA)
	c.Send(t, syscall.SIGHUP)
	e, _ := c.WaitLog(t, next, "SIGHUP: configuration reloaded")
	if got := strings.Join(strs(e["reloaded"]), ","); got != "tls-cert-file,tls-key-file" {
		t.Errorf("reloaded %q", got)
	}
	if err := pingErr(tlsClient(t, addr, newCA.ClientTLSNoCert())); err != nil {
		t.Errorf("a client trusting the new CA: %v", err)
	}
	if err := pingErr(tlsClient(t, addr, oldCA.ClientTLSNoCert())); err == nil {
		t.Error("a client trusting only the old CA is still served")
	}
}

// TestLogDurationsAreText: JSON logs write durations as text ("10s"), not
// as a count of nanoseconds.
func TestLogDurationsAreText(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var b strings.Builder
		log := newLogger(Config{LogFormat: format, LogLevel: "info"}, new(slog.LevelVar), &b)
		log.Info("x", "timeout", 10*time.Second, "took", 1500*time.Microsecond)
		if !strings.Contains(b.String(), "10s") || !strings.Contains(b.String(), "1.5ms") || strings.Contains(b.String(), "10000000000") {
			t.Errorf("%s: %q", format, b.String())
		}
	}
}
