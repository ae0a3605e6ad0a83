package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunBadListen: a --listen value that cannot be an address is a bad
// setting: exit 2 with one line naming it, before anything is started.
func TestRunBadListen(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:abc", "127.0.0.1:70000", "127.0.0.1", "localhost:-1"} {
		t.Run(addr, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"--listen", addr}, envOf(nil), &stdout, &stderr)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], `invalid --listen "`+addr+`"`) {
				t.Fatalf("stderr %q: want one line naming --listen", stderr.String())
			}
		})
	}
}

func TestCheckListenAccepts(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6380", ":0", "[::1]:6380", "localhost:65535"} {
		if err := checkListen(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
