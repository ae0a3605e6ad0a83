package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"

	"github.com/redlockd/redlockd/internal/procpace"
)

// The Go floor is the least a Go server that runs a goroutine per
// connection, as redlockd does, spends per request: it reads what a client
// sent, answers every complete request in it with +OK in one write, and
// does nothing else. Beside redlockd → 1 it tells the cost of the Go
// runtime's network I/O (the netpoller, a goroutine parked and woken per
// read) apart from the work redlockd adds on top of it. It paces its
// processors as redlockd does (internal/procpace).
// The epoll floor (floor_epoll_linux.go) is its work done by an event
// loop of its own.
const (
	anchorGoFloor    = "Go floor"
	anchorEpollFloor = "Go floor, epoll loops"
)

// floorEnv names the address a bench process serves the floor on, when it
// is run as the floor's child process; floorEpollEnv, set to 1, makes it
// the epoll floor (floor_epoll_linux.go).
const (
	floorEnv      = "REDLOCKD_BENCH_GO_FLOOR"
	floorEpollEnv = "REDLOCKD_BENCH_GO_FLOOR_EPOLL"
)

// serveFloorIfAsked serves the floor when this process was started as it,
// and never returns then; otherwise it returns at once.
func serveFloorIfAsked() {
	addr := os.Getenv(floorEnv)
	if addr == "" {
		return
	}
	serve := serveFloor
	if os.Getenv(floorEpollEnv) == "1" {
		serve = serveEpollFloor // a loop per processor the runtime chose
	} else {
		procpace.Start()
	}
	fmt.Fprintln(os.Stderr, "go floor:", serve(addr))
	os.Exit(1)
}

// serveFloor serves the floor on addr until its listener fails.
func serveFloor(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go floorConn(c)
	}
}

// floorMaxRequest bounds what one connection buffers.
const floorMaxRequest = 1 << 20

var floorOK = []byte("+OK\r\n")

func floorConn(c net.Conn) {
	defer c.Close()
	var in floorInput
	out := make([]byte, 0, 16<<10)
	for {
		space := in.space()
		if space == nil {
			return
		}
		n, err := c.Read(space)
		if err != nil {
			return
		}
		var end bool
		if out, end = in.answer(n, out[:0]); len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
		if end {
			return
		}
	}
}

// floorInput is what a connection sent that the floor has not answered:
// the bytes of a request not yet complete.
type floorInput struct {
	buf  []byte
	have int
}

// space is where the next read goes; nil once a request outgrew
// floorMaxRequest (the connection is dropped).
func (in *floorInput) space() []byte {
	if in.buf == nil {
		in.buf = make([]byte, 16<<10)
	}
	if in.have == len(in.buf) {
		if len(in.buf) >= floorMaxRequest {
			return nil
		}
		in.buf = append(in.buf, make([]byte, len(in.buf))...)
	}
	return in.buf[in.have:]
}

// answer takes n bytes read into space and appends to out the answers to
// the requests they complete: +OK each, and the requests before one it
// cannot read are answered before its error. end: the connection ends
// there.
func (in *floorInput) answer(n int, out []byte) (_ []byte, end bool) {
	in.have += n
	reqs, used, bad := countRequests(in.buf[:in.have])
	copy(in.buf, in.buf[used:in.have])
	in.have -= used
	for range reqs {
		out = append(out, floorOK...)
	}
	if bad != nil {
		out = append(out, floorProtocolError...)
	}
	return out, bad != nil
}

// errFloorProtocol is what the floor cannot read; floorProtocolError is
// its reply to it.
var (
	errFloorProtocol   = errors.New("protocol error: the Go floor reads arrays of bulk strings only")
	floorProtocolError = "-ERR Protocol error: the Go floor reads arrays of bulk strings only\r\n"
)

// countRequests counts the complete RESP requests (arrays of bulk
// strings) at the start of b and the bytes they take.
func countRequests(b []byte) (reqs, used int, err error) {
	for {
		n, end, err := floorHeader(b, used, '*')
		if err != nil || end < 0 {
			return reqs, used, err
		}
		at := end
		for range n {
			size, e, err := floorHeader(b, at, '$')
			if err != nil || e < 0 {
				return reqs, used, err
			}
			at = e + size + 2
			if at > len(b) {
				return reqs, used, nil
			}
		}
		reqs, used = reqs+1, at
	}
}

// floorHeader reads the line "<kind><number>\r\n" at b[at:]: the number
// and where the line ends, or end -1 when the line is not all there yet.
func floorHeader(b []byte, at int, kind byte) (n, end int, err error) {
	if at >= len(b) {
		return 0, -1, nil
	}
	if b[at] != kind {
		return 0, 0, errFloorProtocol
	}
	for i := at + 1; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i < at+3 || b[i-1] != '\r' {
			return 0, 0, errFloorProtocol
		}
		n, err := strconv.Atoi(string(b[at+1 : i-1]))
		if err != nil || n < 0 || n > floorMaxRequest {
			return 0, 0, errFloorProtocol
		}
		return n, i + 1, nil
	}
	if len(b)-at > 32 {
		return 0, 0, errFloorProtocol
	}
	return 0, -1, nil
}

// startFloor starts the floor, with epoll its epoll form, as a child
// process: this program run again with floorEnv set.
func startFloor(epoll bool) (*listeningProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorEnv+"="+addr)
	if epoll {
		cmd.Env = append(cmd.Env, floorEpollEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go floor: %w", err)
	}
	return waitListening(cmd, addr, floorName(epoll), nil)
}

// floorName is the anchor's name of the floor, with epoll of its epoll
// form.
func floorName(epoll bool) string {
	if epoll {
		return anchorEpollFloor
	}
	return anchorGoFloor
}
