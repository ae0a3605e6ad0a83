//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rawio

import (
	"sync/atomic"
	"syscall"
)

// Call is one read or write system call that a Conn made on its socket.
type Call struct {
	Conn  *Conn
	Write bool // a write; otherwise a read
	// P is what the call read or wrote, valid only while the tracer
	// runs; empty when it failed.
	P []byte
	// Errno is what the call failed with: EAGAIN when the socket was
	// not ready (the poller then waits), EINTR when it is made again.
	// A read with neither P nor Errno found the peer gone.
	Errno syscall.Errno
}

// tracer is told of every call while set. Unset, a call pays one atomic
// load for it.
var tracer atomic.Pointer[func(Call)]

// Trace tells f of every system call that any Conn makes until stop is
// called, so that a test can count the calls a request costs on a real
// socket. f runs on the goroutine that made the call, under the Conn's
// lock of its direction: it must not block, nor read or write on the
// Conn (its addresses may be asked). One trace at a time: a second
// Trace panics. A call under way when stop is called may still be told.
func Trace(f func(Call)) (stop func()) {
	if !tracer.CompareAndSwap(nil, &f) {
		panic("rawio: Trace while another trace runs")
	}
	return func() { tracer.CompareAndSwap(&f, nil) }
}

// traced tells the tracer, if one is set, of a call that moved p[:n] or
// failed with e. It inlines into the calls' loops as a load and a test.
func (c *Conn) traced(write bool, p []byte, n uintptr, e syscall.Errno) {
	if tracer.Load() != nil {
		c.tell(write, p, n, e)
	}
}

//go:noinline
func (c *Conn) tell(write bool, p []byte, n uintptr, e syscall.Errno) {
	f := tracer.Load()
	if f == nil {
		return // stopped meanwhile
	}
	if e != 0 {
		n = 0
	}
	(*f)(Call{Conn: c, Write: write, P: p[:n], Errno: e})
}
