package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

func TestCountRequests(t *testing.T) {
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	for _, c := range []struct {
		in         string
		reqs, used int
		bad        bool
	}{
		{"", 0, 0, false},
		{set, 1, len(set), false},
		{set + set, 2, 2 * len(set), false},
		{set + set[:10], 1, len(set), false},
		{set[:len(set)-1], 0, 0, false},
		{"*1\r\n$0\r\n\r\n", 1, 10, false},
		{"*0\r\n", 1, 4, false},
		{"PING\r\n", 0, 0, true},
		{"*1\r\n+x\r\n", 0, 0, true},
		{"*-1\r\n", 0, 0, true},
		{"*x\r\n", 0, 0, true},
		{"*1\n", 0, 0, true},
		{"*" + strings.Repeat("1", 40), 0, 0, true},
	} {
		reqs, used, err := countRequests([]byte(c.in))
		if reqs != c.reqs || used != c.used || (err != nil) != c.bad {
			t.Errorf("countRequests(%q) = %d, %d, %v; want %d, %d, error %v", c.in, reqs, used, err, c.reqs, c.used, c.bad)
		}
	}
}

// TestFloorAnswersEachRequest: a pipelined batch split across writes gets
// one +OK per request, and a request it cannot read gets an error and the
// connection closed.
func TestFloorAnswersEachRequest(t *testing.T) {
	for _, epoll := range []bool{false, true} {
		if epoll && !epollFloorSupported {
			continue
		}
		p, err := startFloor(epoll)
		if err != nil {
			t.Fatal(err)
		}
		floorAnswers(t, p.addr)
		p.stop()
	}
}

func floorAnswers(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	batch := set + set + set
	if _, err := c.Write([]byte(batch[:20])); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(batch[20:] + "PING\r\n")); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(c)
	for i := range 3 {
		line, err := rd.ReadString('\n')
		if err != nil || line != "+OK\r\n" {
			t.Fatalf("reply %d: %q, %v", i, line, err)
		}
	}
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "-ERR Protocol error") {
		t.Fatalf("after a bad request: %q, %v", line, err)
	}
	if _, err := rd.ReadByte(); err == nil {
		t.Fatal("the connection stayed open after a bad request")
	}
}
