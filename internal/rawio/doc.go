// Package rawio reads and writes TCP sockets without handing the
// goroutine's processor back to the scheduler for the system call.
//
// Go's sockets are non-blocking: a read or write returns at once, with
// data or EAGAIN, and the poller does the waiting. Yet net.Conn enters
// every call as one that may block: the processor is released for it,
// and the runtime's monitor, seeing a processor held by a system call
// longer than its 20 µs tick, hands it to another thread, which it wakes.
// On loopback a write carries the receiver's TCP work and often takes
// that long, so a proxy that writes for every request pays thread
// wake-ups and context switches for calls that never block. Here the
// calls are raw: the goroutine keeps its processor, as it would for the
// same work done in Go; the poller still waits where the socket is not
// ready, and deadlines and Close work as on the net.Conn. On a system
// without raw system calls here (Windows, Solaris), Wrap leaves every
// connection as it is.
package rawio
