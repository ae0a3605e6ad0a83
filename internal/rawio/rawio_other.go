//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rawio

import "net"

// Conn is never made on this system: Wrap leaves every connection as it
// is, and its socket calls are net.Conn's.
type Conn struct{ *net.TCPConn }

// Wrap returns c itself.
func Wrap(c net.Conn) net.Conn { return c }

// TryWrite writes nothing: no Conn exists here to write on.
func (c *Conn) TryWrite([]byte) int { return 0 }
