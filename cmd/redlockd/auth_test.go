package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/testcerts"
)

func ctx5(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestRunRequirePassGoRedis: go-redis with the password is served over
// RESP3 (HELLO 3 AUTH) and RESP2 (AUTH); without it every command gets
// NOAUTH; a wrong password gets WRONGPASS.
func TestRunRequirePassGoRedis(t *testing.T) {
	r := start(t, "--requirepass", "s3cret")
	for _, proto := range []int{3, 2} {
		c := redis.NewClient(&redis.Options{Addr: r.addr, Password: "s3cret", Protocol: proto})
		lockOnce(t, c, "auth-key")
		c.Do(ctx5(t), "DEL", "auth-key")
		c.Close()
	}
	for _, proto := range []int{3, 2} {
		c := redis.NewClient(&redis.Options{Addr: r.addr, Protocol: proto, MaxRetries: -1})
		err := c.Do(ctx5(t), "LOCK", "k", "1000").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH ") {
			t.Errorf("protocol %d without a password: LOCK = %v, want NOAUTH", proto, err)
		}
		c.Close()
		c = redis.NewClient(&redis.Options{Addr: r.addr, Password: "wrong", Protocol: proto, MaxRetries: -1})
		err = c.Ping(ctx5(t)).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS ") {
			t.Errorf("protocol %d with a wrong password: PING = %v, want WRONGPASS", proto, err)
		}
		c.Close()
	}
}

// TestRunRequirePassRaw checks the exact replies of the AUTH sequence.
func TestRunRequirePassRaw(t *testing.T) {
	r := start(t, "--requirepass", "s3cret")
	nc, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(nc)
	for _, step := range []struct{ send, want string }{
		{"GET k\r\n", "-NOAUTH Authentication required.\r\n"},
		{"AUTH nope\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH someone s3cret\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"PING\r\n", "-NOAUTH Authentication required.\r\n"},
		{"AUTH default s3cret\r\n", "+OK\r\n"},
		{"PING\r\n", "+PONG\r\n"},
		{"RESET\r\n", "+RESET\r\n"},
		{"PING\r\n", "-NOAUTH Authentication required.\r\n"},
		{"AUTH s3cret\r\n", "+OK\r\n"},
	} {
		if _, err := nc.Write([]byte(step.send)); err != nil {
			t.Fatal(err)
		}
		if got, err := rd.ReadString('\n'); err != nil || got != step.want {
			t.Fatalf("%q: got %q, %v; want %q", step.send, got, err, step.want)
		}
	}
}

// TestRunRedisCLI: redis-cli with -a, and with --tls against the TLS
// listener.
func TestRunRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not on PATH (apt-get install redis-tools): %v", err)
	}
	certs := testcerts.New(t)
	r := start(t, "--requirepass", "s3cret", "--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey)
	host, port, _ := net.SplitHostPort(r.addr)
	base := []string{"-h", host, "-p", port, "--tls", "--cacert", certs.CAFile}
	runCLI := func(args ...string) string {
		t.Helper()
		out, err := childproc.CombinedOutput(childproc.Command(cli, append(append([]string{}, base...), args...)...))
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := runCLI("-a", "s3cret", "--no-auth-warning", "LOCK", "cli-key", "5000"); !strings.Contains(got, "\n") {
		t.Fatalf("LOCK via redis-cli -a = %q, want token and validity", got)
	}
	if got := runCLI("-a", "s3cret", "--no-auth-warning", "EXISTS", "cli-key"); got != "1" {
		t.Fatalf("EXISTS = %q, want 1", got)
	}
	if got := runCLI("EXISTS", "cli-key"); !strings.Contains(got, "NOAUTH") {
		t.Fatalf("EXISTS without -a = %q, want NOAUTH", got)
	}
	if got := runCLI("-a", "wrong", "--no-auth-warning", "PING"); !strings.Contains(got, "WRONGPASS") {
		t.Fatalf("PING with a wrong password = %q, want WRONGPASS", got)
	}
}
