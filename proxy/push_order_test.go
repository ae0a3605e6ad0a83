package proxy

import (
	"testing"
	"time"
)

// connOf waits until ts serves r's connection and returns its state.
func (ts *testServer) connOf(t *testing.T, r *raw) *connState {
	t.Helper()
	addr := r.nc.LocalAddr().String()
	var found *connState
	waitUntil(t, 10*time.Second, "the connection to be registered", func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		for st := range ts.srv.conns {
			if st.addr == addr {
				found = st
				return true
			}
		}
		return false
	})
	return found
}

// invalidationK is what st.invalidate([]string{"k"}) writes to a RESP2
// connection.
const invalidationK = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"

// blockedBatch has a holder take lock x and k hold v1, and returns a
// client that has not sent anything yet and a release of x.
func blockedBatch(t *testing.T, ts *testServer) (*raw, func()) {
	t.Helper()
	holder := ts.dial(t)
	holder.send("LOCK x 60000 TOKEN h\r\n")
	holder.expect("*2\r\n$1\r\nh\r\n:")
	holder.rd.ReadString('\n') // the validity
	holder.send("SET k v1 PX 60000\r\n")
	holder.expect("+OK\r\n")
	return ts.dial(t), func() {
		holder.send("UNLOCK x h\r\n")
		holder.expect(":1\r\n")
	}
}

// TestPushAfterReadBeforeWait: in a batch that blocks, the reply of a
// read before the LOCK … WAIT is written at once, as Redis writes the
// replies before a command that blocks, and a push made during the wait
// follows it without waiting for the wait to end.
func TestPushAfterReadBeforeWait(t *testing.T) {
	ts := startServer(t, Options{})
	c, release := blockedBatch(t, ts)
	c.send("GET k\r\nLOCK x 60000 WAIT 30000 TOKEN w\r\n")
	st := ts.connOf(t, c)
	c.expect("$2\r\nv1\r\n")
	waitUntil(t, 10*time.Second, "the LOCK to wait", func() bool { return ts.cluster.Waiters("x") == 1 })
	st.invalidate([]string{"k"})
	c.expect(invalidationK)
	release()
	c.expect("*2\r\n$1\r\nw\r\n:")
}

// TestPushAfterReadBehindWait: a read pipelined behind a LOCK … WAIT runs
// during the wait, and its reply waits for the LOCK's; a push made while
// that reply is owed waits for it too, whether or not the read has
// finished: it may invalidate what the read answered.
func TestPushAfterReadBehindWait(t *testing.T) {
	ts := startServer(t, Options{})
	c, release := blockedBatch(t, ts)
	c.send("LOCK x 60000 WAIT 30000 TOKEN w\r\nGET k\r\n")
	st := ts.connOf(t, c)
	waitUntil(t, 10*time.Second, "the LOCK to wait", func() bool { return ts.cluster.Waiters("x") == 1 })
	st.invalidate([]string{"k"})
	release()
	c.expect("*2\r\n$1\r\nw\r\n:")
	c.rd.ReadString('\n') // the validity
	c.expect("$2\r\nv1\r\n")
	c.expect(invalidationK)
	// The next batch is served as any.
	c.send("PING\r\n")
	c.expect("+PONG\r\n")
}
