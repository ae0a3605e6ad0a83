package proxy

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// meetNode is an in-memory node whose SetNX of keys starting with "meet:"
// returns only once `want` such calls are inside it at the same time (or
// ctx ends). A pipeline run one command after another can never get there.
type meetNode struct {
	*embedded.Memory
	want int

	mu      sync.Mutex
	entered int
	all     chan struct{}
}

func newMeetNode(name string, want int) *meetNode {
	return &meetNode{Memory: embedded.New(name), want: want, all: make(chan struct{})}
}

// Do holds a SET NX of a "meet:" key until want of them are in.
func (m *meetNode) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind != quorum.SetNX || !strings.HasPrefix(cmd.Key, "meet:") {
		m.Memory.Do(deadline, cmd, r)
		return
	}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		m.mu.Lock()
		if m.entered++; m.entered == m.want {
			close(m.all)
		}
		m.mu.Unlock()
		select {
		case <-m.all:
		case <-ctx.Done():
			r.Receive(quorum.Reply{Err: ctx.Err()})
			return
		}
		m.Memory.Do(deadline, cmd, r)
	}()
}

func TestPipelineRunsConcurrently(t *testing.T) {
	const n = 16
	var nodes []quorum.Node
	for i := range 3 {
		nodes = append(nodes, newMeetNode(fmt.Sprintf("meet-%d", i), n))
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, "SET meet:%d t%d NX PX 10000\r\n", i, i)
	}
	r.send(batch.String())
	r.expect(strings.Repeat("+OK\r\n", n))
}

// Commands on one key keep their order: the UNLOCK must see the LOCK
// before it, and the second LOCK the UNLOCK.
//
// Each round has its own key: an acquire returns once a majority granted,
// and its SET on the third node can still land after the UNLOCK there,
// leaving a minority copy for the ttl. One such copy cannot change a
// round's replies, but copies left by earlier rounds on the same key can
// add up to a majority of "no" for a later SET.
func TestPipelineSameKeyInOrder(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	for i := range 20 {
		r.send(fmt.Sprintf("SET k%[1]d t1 NX PX 10000\r\nUNLOCK k%[1]d t1\r\nSET k%[1]d t2 NX PX 10000\r\nUNLOCK k%[1]d t2\r\nEXISTS k%[1]d\r\n", i))
		r.expect("+OK\r\n:1\r\n+OK\r\n:1\r\n:0\r\n")
	}
}

// A connection command divides the batch: what comes after HELLO 3 is
// encoded in RESP3, what came before it in RESP2.
func TestPipelineBarrierSwitchesProtocol(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("GET a\r\nGET b\r\nHELLO 3\r\nGET a\r\nGET b\r\nPING\r\n")
	var kinds []byte
	for range 6 {
		kinds = append(kinds, readValue(t, r.rd))
	}
	if got, want := string(kinds), "$$%__+"; got != want {
		t.Fatalf("reply kinds %q, want %q", got, want)
	}
}

// QUIT ends the batch: nothing after it runs.
func TestPipelineQuitIsBarrier(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("SET a t NX PX 10000\r\nSET b t NX PX 10000\r\nQUIT\r\nSET c t NX PX 10000\r\n")
	r.expect("+OK\r\n+OK\r\n+OK\r\n")
	r.expectEOF()
	r2 := ts.dial(t)
	r2.send("EXISTS a\r\nEXISTS b\r\nEXISTS c\r\n")
	r2.expect(":1\r\n:1\r\n:0\r\n")
}

// readValue reads one RESP2/RESP3 value and returns its type byte.
func readValue(t *testing.T, rd *bufio.Reader) byte {
	t.Helper()
	line, err := rd.ReadString('\n')
	if err != nil || len(line) < 3 {
		t.Fatalf("reading a reply: %q, %v", line, err)
	}
	kind, body := line[0], strings.TrimSuffix(line[1:], "\r\n")
	n, _ := strconv.Atoi(body)
	switch kind {
	case '$', '=', '!':
		if n >= 0 {
			if _, err := rd.Discard(n + 2); err != nil {
				t.Fatal(err)
			}
		}
	case '*', '~', '>':
		for range n {
			readValue(t, rd)
		}
	case '%':
		for range 2 * n {
			readValue(t, rd)
		}
	}
	return kind
}

// A batch longer than the in-flight limit and the per-connection run cap
// still gets every reply, in order.
func TestPipelineLongerThanLimits(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	const n = 3*maxPipelined + 5
	var batch, want strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, "SET long:%d t NX PX 10000\r\nECHO %d\r\n", i, i)
		fmt.Fprintf(&want, "+OK\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
	}
	r.send(batch.String())
	r.expect(want.String())
}
