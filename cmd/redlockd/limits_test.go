package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "1k": 1000, "1kb": 1024, "1KB": 1024, "2m": 2e6, "2mb": 2 << 20,
		"1g": 1e9, "1gb": 1 << 30, "512mb": 512 << 20, "7b": 7,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1tb", "1.5mb", "99999999999gb"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

// TestRunLimitFlags: --max-request-size and --idle-timeout reach the
// listener.
func TestRunLimitFlags(t *testing.T) {
	r := start(t, "--max-request-size", "1kb", "--idle-timeout", "300ms")
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc, bufio.NewReader(nc)
	}
	big, rd := dial()
	big.Write([]byte("ECHO " + strings.Repeat("x", 2000) + "\r\n"))
	if line, err := rd.ReadString('\n'); err == nil {
		t.Fatalf("a 2 KB request with --max-request-size 1kb got %q", line)
	}
	idle, rd := dial()
	began := time.Now()
	idle.Write([]byte("PING\r\n"))
	if line, err := rd.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING = %q, %v", line, err)
	}
	if _, err := rd.ReadString('\n'); err == nil {
		t.Fatal("idle connection got more data")
	}
	if d := time.Since(began); d < 300*time.Millisecond || d > 8*time.Second {
		t.Fatalf("idle connection closed after %v, want about 300ms", d)
	}
}
