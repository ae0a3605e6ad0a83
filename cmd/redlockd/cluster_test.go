package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// Two cluster:// backends that reach one server (two seeds of one
// cluster), or a cluster and a plain backend that is one of its masters,
// are one node counted twice: exit 2 with one line.
func TestRunRefusesClustersSharingAServer(t *testing.T) {
	a, b := redistest.StartCluster(t, 3, 0), redistest.StartCluster(t, 3, 0)
	tests := []struct {
		name     string
		backends []string
	}{
		{"one cluster twice", []string{"cluster://" + a.Masters[0].Addr(), "cluster://" + a.Masters[2].Addr(), "cluster://" + b.Masters[0].Addr()}},
		{"a cluster and its master", []string{"cluster://" + a.Masters[0].Addr(), "cluster://" + b.Masters[0].Addr(), a.Masters[1].Addr()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			// A proxy that accepts them serves until the timeout, then exits 0.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code := run(ctx, []string{"--listen", "127.0.0.1:0", "--log-level", "error", "--backends", strings.Join(tt.backends, ",")},
				envOf(nil), io.Discard, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "are the same server") || strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line saying they are the same server", code, stderr.String())
			}
		})
	}
}

// A bad cluster:// address is a bad setting: exit 2 with one line.
func TestRunRefusesBadClusterURL(t *testing.T) {
	for _, addr := range []string{"cluster://127.0.0.1:1?shard=x", "cluster://127.0.0.1:1/3", "cluster://127.0.0.1:1?seed=nohost"} {
		var stderr strings.Builder
		code := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--backends", addr}, envOf(nil), io.Discard, &stderr)
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 {
			t.Fatalf("%s: exit %d, stderr %q; want 2 and one line", addr, code, stderr.String())
		}
	}
}
