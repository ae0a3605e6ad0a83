package main

import (
	"log/slog"
	"testing"

	"github.com/redlockd/redlockd/server"
)

// TestFlagDefaultsAreTheStack: the flags' defaults and server.DefaultConfig
// are the same settings, so that a redlockd assembled without flags (the
// tests') runs as the binary does.
func TestFlagDefaultsAreTheStack(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, want := stackConfig(cfg, slog.Default()), server.DefaultConfig()
	type limits struct {
		clients, request, reply int
		idle, write             int64
	}
	lim := func(c server.Config) limits {
		p := c.Proxy
		return limits{p.MaxClients, p.MaxRequestBytes, p.MaxReplyBytes, int64(p.IdleTimeout), int64(p.WriteTimeout)}
	}
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"node timeout", got.NodeTimeout, want.NodeTimeout},
		{"drift factor", got.DriftFactor, want.DriftFactor},
		{"max ttl", got.MaxTTL, want.MaxTTL},
		{"restart quarantine", got.RestartQuarantine, want.RestartQuarantine},
		{"max wait", got.MaxWait, want.MaxWait},
		{"session ttl", got.SessionTTL, want.SessionTTL},
		{"retry delay", got.RetryDelay, want.RetryDelay},
		{"listener limits", lim(got), lim(want)},
	} {
		if d.got != d.want {
			t.Errorf("%s: flags %v, server.DefaultConfig %v", d.name, d.got, d.want)
		}
	}
}
