//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rawio

import (
	"io"
	"net"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read and Write are raw calls. Every
// other method is the wrapped connection's.
type Conn struct {
	*net.TCPConn
	raw syscall.RawConn

	// A call's state lives here, under its direction's lock, so that the
	// callbacks are made once: a closure per call would allocate.
	rmu, wmu   sync.Mutex
	rp, wp     []byte
	rn, wn     int
	rerr, werr syscall.Errno
	readFn     func(fd uintptr) bool
	writeFn    func(fd uintptr) bool
	tryFn      func(fd uintptr) bool
}

// Wrap returns c's raw form when c is a TCP connection, and c itself
// otherwise (TLS, a pipe, a test's wrapper).
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	rc := &Conn{TCPConn: tc, raw: raw}
	rc.readFn = rc.readRaw
	rc.writeFn = rc.writeRaw
	rc.tryFn = rc.tryRaw
	return rc
}

// Read reads what the socket holds, waiting in the poller when it holds
// nothing.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.rp, c.rn, c.rerr = p, 0, 0
	err := c.raw.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rp = nil
	c.rmu.Unlock()
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) readRaw(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rp[0])), uintptr(len(c.rp)))
		c.traced(false, c.rp, n, e)
		switch e {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the poller
		}
		c.rerr = e
		return true
	}
}

// Write writes all of p, waiting in the poller whenever the socket's
// buffer is full.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	c.wp, c.wn, c.werr = p, 0, 0
	err := c.raw.Write(c.writeFn)
	n, errno := c.wn, c.werr
	c.wp = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	}
	return n, nil
}

func (c *Conn) writeRaw(fd uintptr) bool {
	for c.wn < len(c.wp) {
		rest := c.wp[c.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		c.traced(true, rest, n, e)
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait in the poller
		default:
			c.werr = e
			return true
		}
	}
	return true
}

// TryWrite writes what the socket takes at once and returns how much that
// was; it never waits. Any error is left for a Write to report.
func (c *Conn) TryWrite(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	c.wmu.Lock()
	c.wp, c.wn, c.werr = p, 0, 0
	c.raw.Write(c.tryFn)
	n := c.wn
	c.wp = nil
	c.wmu.Unlock()
	return n
}

func (c *Conn) tryRaw(fd uintptr) bool {
	c.writeRaw(fd)
	return true
}
