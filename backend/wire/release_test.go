package wire

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
)

// recycled is a Releaser around its own request, as a pooled caller's
// record is: it checks that each submission is answered once, with the
// reply to its own command, and released once, after its answer; then it
// goes to free, to be submitted again.
type recycled struct {
	req      Request
	id       string // what the command asks the server to echo
	answered atomic.Int32
	released atomic.Int32
	got      chan pairResult // nil: answers are only checked
	free     chan *recycled  // nil: nowhere to go
	fail     func(format string, args ...any)
}

func (a *recycled) Answer(rep Reply, at time.Time, err error) {
	if n := a.answered.Add(1); n != 1 {
		a.fail("%s: answered %d times", a.id, n)
	}
	if err == nil && rep.Str != a.id {
		a.fail("%s: answered with %q, another command's reply", a.id, rep.Str)
	}
	if a.got != nil {
		a.got <- pairResult{rep, at, err}
	}
}

func (a *recycled) Released(r *Request) {
	if r != &a.req {
		a.fail("%s: released %p, not its request", a.id, r)
	}
	if n := a.answered.Load(); n != 1 {
		a.fail("%s: released after %d answers", a.id, n)
	}
	if n := a.released.Add(1); n != 1 {
		a.fail("%s: released %d times", a.id, n)
	}
	if a.free != nil {
		a.free <- a // buffered for every record: never blocks
	}
}

// reuse makes a ready for its next submission: an echo of id, between
// two commands whose replies are skipped and dropped where wrapped.
func (a *recycled) reuse(id string, wrapped bool) {
	a.req = Request{}
	a.id = id
	a.answered.Store(0)
	a.released.Store(0)
	b := a.req.Small[:0]
	if wrapped {
		b = resp.AppendCommand(b, []string{"before", "x"})
		a.req.Skip, a.req.After = 1, 1
	}
	b = resp.AppendCommand(b, []string{"echo", id})
	if wrapped {
		b = resp.AppendCommand(b, []string{"after", "y"})
	}
	a.req.Buf = b
}

// echoServer answers every command with its last argument, in order. Each
// connection calls pace before each reply: it may sleep, and returns false
// to close the connection instead.
func echoServer(t *testing.T, pace func() bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveEcho(c, pace)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveEcho(c net.Conn, pace func() bool) {
	var buf []byte
	tmp := make([]byte, 16<<10)
	for {
		k, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:k]...)
		for {
			cmd, used, err := ParseReply(buf)
			if err != nil || used == 0 {
				break
			}
			buf = buf[used:]
			if !pace() {
				return
			}
			last := cmd.Elems[len(cmd.Elems)-1].Str
			out := fmt.Appendf(nil, "$%d\r\n%s\r\n", len(last), last)
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

func newEchoMux(t *testing.T, addr string, conns int) *Mux {
	var d net.Dialer
	return NewMux(Config{Conns: conns, Timeout: time.Second, Preload: [][]string{{"echo", "preload"}},
		Dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }})
}

// failer reports the first failure of the goroutines of a line.
type failer struct {
	n     atomic.Int32
	mu    sync.Mutex
	first string
}

func (f *failer) fail(format string, args ...any) {
	if f.n.Add(1) == 1 {
		f.mu.Lock()
		f.first = fmt.Sprintf(format, args...)
		f.mu.Unlock()
	}
}

func (f *failer) check(t *testing.T) {
	t.Helper()
	if n := f.n.Load(); n > 0 {
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Fatalf("%d failures, the first: %s", n, f.first)
	}
}

// awaitReleased waits until a was released.
func awaitReleased(t *testing.T, a *recycled) {
	t.Helper()
	for i := 0; a.released.Load() == 0; i++ {
		if i == 1000 {
			t.Fatalf("%s: never released", a.id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Releaser is told once per submission, after its answer, and only
// once the line holds the request no more: a request answered at its
// deadline stays the line's until its late reply was read, which then
// finds it as it was, answered.
func TestReleaserToldOnceTheLineLetGo(t *testing.T) {
	var f failer
	hold := make(chan struct{})
	var held atomic.Bool
	addr := echoServer(t, func() bool {
		if held.Load() {
			<-hold
		}
		return true
	})
	m := newEchoMux(t, addr, 1)
	defer m.Close()
	l := m.lines[0]
	newRec := func(id string, wrapped bool) *recycled {
		a := &recycled{got: make(chan pairResult, 1), fail: f.fail}
		a.reuse(id, wrapped)
		return a
	}

	// Answered by its reply; the sweep lets go of it at its deadline (a
	// second: the dial and the reply must come before it on a loaded
	// machine).
	a := newRec("1", false)
	l.Submit(&a.req, time.Now().Add(time.Second), a)
	if res := awaitPair(t, a.got); res.err != nil || res.rep.Str != "1" {
		t.Fatalf("answer: %+v", res)
	}
	awaitReleased(t, a)

	// Answered at its deadline; its reply comes later.
	held.Store(true)
	a = newRec("2", true)
	l.Submit(&a.req, time.Now().Add(50*time.Millisecond), a)
	if res := awaitPair(t, a.got); !errors.Is(res.err, context.DeadlineExceeded) {
		t.Fatalf("answer past the deadline: %+v", res)
	}
	time.Sleep(50 * time.Millisecond)
	if a.released.Load() != 0 {
		t.Fatal("released while its reply was still awaited")
	}
	held.Store(false)
	close(hold)
	awaitReleased(t, a)
	f.check(t)

	// Refused by a closed line.
	m.Close()
	a = newRec("3", false)
	l.Submit(&a.req, time.Now().Add(10*time.Second), a)
	if res := awaitPair(t, a.got); !errors.Is(res.err, ErrClosed) {
		t.Fatalf("answer of a closed line: %+v", res)
	}
	awaitReleased(t, a)
	f.check(t)
}

// Records that are submitted again as soon as they are released, over
// lines whose server answers late, past the deadlines, or drops the
// connection, are never reused while a line still holds them: each
// answer is its own command's reply, given once, and each release comes
// once, after it. Run under the race detector, any access of the line to
// a request it let go of is reported too. Once the mux is closed, every
// submission was released.
func TestReleasedRequestsAreReusedSafely(t *testing.T) {
	var f failer
	addr := echoServer(t, func() bool {
		switch n := rand.IntN(1000); {
		case n < 3:
			return false // a reset
		case n < 60:
			time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
		}
		return true
	})
	m := newEchoMux(t, addr, 2)
	const records = 64
	free := make(chan *recycled, records)
	for range records {
		free <- &recycled{free: free, fail: f.fail}
	}
	var submitted int
	stop := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(stop); i++ {
		var a *recycled
		select {
		case a = <-free:
		case <-time.After(10 * time.Second):
			t.Fatal("no record released in 10s")
		}
		id := strconv.Itoa(i)
		a.reuse(id, i%5 == 0)
		dl := time.Now().Add(time.Duration(2+rand.IntN(10)) * time.Millisecond)
		m.Line(id).Submit(&a.req, dl, a)
		submitted++
	}
	m.Close()
	for i := 0; len(free) < records; i++ {
		if i == 1000 {
			t.Fatalf("%d records of %d never released after Close", records-len(free), records)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.check(t)
	t.Logf("%d submissions", submitted)
}
