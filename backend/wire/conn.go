package wire

import (
	"net"

	"github.com/redlockd/redlockd/internal/resp"
)

// Conn is one connection spoken to directly, one command at a time, with
// the multiplexer's own encoder and parser: for what must never sit in a
// Mux's queue, such as a slow INFO or a subscribed connection.
type Conn struct {
	NC  net.Conn
	buf []byte // read but not yet parsed
	out []byte
}

// Write sends one command.
func (c *Conn) Write(args ...string) error {
	c.out = resp.AppendCommand(c.out[:0], args)
	_, err := c.NC.Write(c.out)
	return err
}

// Read returns the next reply. A read that times out keeps what it got, so
// the next read resumes where it stopped.
func (c *Conn) Read() (Reply, error) {
	for {
		rep, n, err := ParseReply(c.buf)
		if err != nil {
			return Reply{}, err
		}
		if n > 0 {
			c.buf = c.buf[:copy(c.buf, c.buf[n:])]
			return rep, nil
		}
		if len(c.buf) == cap(c.buf) {
			c.buf = append(c.buf, make([]byte, max(4096, cap(c.buf)))...)[:len(c.buf)]
		}
		k, err := c.NC.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+k]
		if err != nil {
			return Reply{}, err
		}
	}
}
