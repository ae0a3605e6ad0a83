package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestRunRefusesUnusableAddresses: an address that cannot be listened on
// is a bad setting like one that does not parse: exit 2, one line naming
// the flag and the value, before any backend is dialled.
func TestRunRefusesUnusableAddresses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	inUse := busy.Addr().String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"metrics-addr not an address", []string{"--metrics-addr", "nonsense"}, `redlockd: invalid --metrics-addr "nonsense": want host:port`},
		{"metrics-addr bad port", []string{"--metrics-addr", "127.0.0.1:99999"}, `redlockd: invalid --metrics-addr "127.0.0.1:99999": port must be`},
		{"metrics-addr in use", []string{"--metrics-addr", inUse}, `redlockd: invalid --metrics-addr "` + inUse + `": cannot listen: `},
		{"metrics-addr not local", []string{"--metrics-addr", "192.0.2.1:9380"}, `redlockd: invalid --metrics-addr "192.0.2.1:9380": cannot listen: `},
		{"listen in use", []string{"--listen", inUse}, `redlockd: invalid --listen "` + inUse + `": cannot listen: `},
		{"listen not local", []string{"--listen", "192.0.2.1:6380"}, `redlockd: invalid --listen "192.0.2.1:6380": cannot listen: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--listen") {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, envOf(nil), &stdout, &stderr)
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and one line starting %q", code, stderr.String(), exitUsage, tt.want)
			}
		})
	}
}

// TestRunWarns: settings that run but are most likely mistakes are logged
// as warnings at start-up.
func TestRunWarns(t *testing.T) {
	servers := redistest.StartN(t, 2)
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"one backend", []string{"--backends", servers[0].Addr()}, nil, "one backend: no fault tolerance"},
		{"two backends", []string{"--backends", servers[0].Addr() + "," + servers[1].Addr()}, nil,
			"two backends: the quorum is 2, so the failure of either one stops all locking"},
		{"misspelled variable", nil, []string{"PATH=/bin", "REDLOCKD_BACKEND=a:1", "REDLOCKD_LISTEN=x"},
			"environment variable REDLOCKD_BACKEND is not a setting and is ignored; did you mean REDLOCKD_BACKENDS?"},
		{"unknown variable", nil, []string{"REDLOCKD_SOMETHING_ELSE_ENTIRELY=1"},
			"environment variable REDLOCKD_SOMETHING_ELSE_ENTIRELY is not a setting and is ignored"},
		{"backend TLS without rediss", []string{"--backend-tls-insecure-skip-verify"}, nil,
			"--backend-tls-insecure-skip-verify has no effect: no backend is rediss:// or clusters://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := environ
			environ = func() []string { return tt.environ }
			defer func() { environ = old }()
			r := start(t, append(tt.args, slowMachine...)...)
			if !r.logged("WARN", tt.want) {
				t.Errorf("no warning %q; logs %v", tt.want, r.entries())
			}
			if code := r.stop(); code != 0 {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

func TestNoWarningsForAGoodConfig(t *testing.T) {
	c, err := loadConfig([]string{"--backends", "a:1,b:2,c:3"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if w := append(c.warnings(), envWarnings([]string{"REDLOCKD_BACKENDS=a:1", "REDLOCKD_CONFIG=x", "HOME=/"})...); len(w) > 0 {
		t.Fatalf("warnings %q", w)
	}
}
