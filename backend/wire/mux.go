package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/internal/rawio"
	"github.com/redlockd/redlockd/internal/resp"
)

const (
	// NoDeadlineBudget bounds an operation whose ctx has no deadline, so
	// that a silent server can never hold a request (or its connection)
	// forever.
	NoDeadlineBudget = 5 * time.Second
	// readBufSize is the reader's initial buffer: many replies per read.
	readBufSize = 16 << 10
	// minStaleGrace is the least time past its deadline that an unanswered
	// request must wait before its connection counts as stalled: on a
	// starved CPU the reader itself can be that late.
	minStaleGrace = 250 * time.Millisecond
)

// Config says how to open one connection to the server.
type Config struct {
	// Conns is how many connections a Mux shares (one at least).
	Conns int
	// Dial opens a ready connection (TLS done); Handshake then logs in and
	// selects the db on it.
	Dial      func(ctx context.Context) (net.Conn, error)
	Handshake [][]string
	Timeout   time.Duration // bounds Open: dial, handshake, Connected
	// Grace is a written request's whole budget (see Request.grace); zero:
	// the time left to its deadline when written.
	Grace time.Duration
	// Connected, when set, runs on every new connection after the
	// handshake and before any request; an error drops the connection.
	Connected func(ctx context.Context, nc net.Conn) error
	// Preload is written on each new line connection ahead of its first
	// batch, in the same write: it costs no round trip. Its replies are
	// read and dropped (the commands it prepares for work without it).
	Preload [][]string
	// TLSConfig and DB are what Dial and Handshake were built from, kept
	// for inspection.
	TLSConfig *tls.Config
	DB        int
}

// Mux shares a few connections among every caller of one server. Requests
// queued while a write is in flight leave together in the next write, and
// their replies come back in one read, so 50 clients cost a few syscalls per
// batch rather than one connection and two syscalls each. Each request still
// ends at its own deadline: the caller stops waiting then, whatever the
// connection does.
type Mux struct {
	lines []*Line
	seed  maphash.Seed
}

// NewMux starts the writers of cfg.Conns lines; each connects when it is
// first given work (or by WarmUp).
func NewMux(cfg Config) *Mux {
	m := &Mux{lines: make([]*Line, max(cfg.Conns, 1)), seed: maphash.MakeSeed()}
	for i := range m.lines {
		l := &Line{cfg: &cfg, wake: make(chan struct{}, 1), warmReq: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		l.ctx, l.cancel = context.WithCancel(context.Background())
		m.lines[i] = l
		go l.run()
	}
	return m
}

// Request states. A request is written only if the writer moves it from
// queued to sent before its caller gives up (queued to abandoned): a caller
// that timed out before its command left knows it never reached the server.
const (
	stQueued int32 = iota
	stSent
	stAbandoned
)

// Request is one submission to a line: Buf, the encoded command or
// commands, and how to pair their replies. Small is room for a short Buf,
// saving an allocation.
type Request struct {
	Buf      []byte
	deadline time.Time
	// grace is how long past its deadline an unanswered request waits
	// before it marks its connection as stalled (see stale). The caller
	// has given up at the deadline already; the grace keeps a CPU-starved
	// proxy, whose reader is merely late, from resetting a healthy
	// connection and failing everything queued behind. Set by the writer.
	grace time.Duration
	// cb is called once, by whoever first settles the request (the reader,
	// the writer, a reset, or the line's sweeper at the deadline); fired
	// says it was.
	cb    Answerer
	state atomic.Int32
	fired atomic.Bool
	// refs counts what holds the request: its answer until cb.Answer
	// has returned, the line until it left the queue and the replies
	// awaited, the sweep until it left the watch, and the reader while
	// it delivers the answer of a request that stays for replies after
	// it (see pop). The last to let go tells a Releaser cb (see unref).
	refs atomic.Int32
	// Skip is how many replies come before the one that answers the
	// request (a MULTI … EXEC sent as one request: only EXEC's counts);
	// they are dropped. After is how many come after it (HELLO 2 behind a
	// script wanted in RESP3), dropped too: negative once the answer was
	// read. Both read and counted under the line's lock. A few at most:
	// int16 keeps a request, and the record it is embedded in, small.
	Skip  int16
	After int16
	Small [160]byte
}

// Deadline is the deadline r was submitted with.
func (r *Request) Deadline() time.Time { return r.deadline }

// stale is when the unanswered request marks its connection as stalled.
func (r *Request) stale() time.Time { return r.deadline.Add(r.grace) }

// graceFor is the grace of a request sent at now: its whole budget again
// (what it had left when written, if the budget is not configured), at
// least minStaleGrace. The time a request waited in the queue or for a
// dial does not shorten it. Computed when the batch is written, from the
// writer's one clock read, rather than per submitted command.
func (c *Config) graceFor(deadline, now time.Time) time.Duration {
	if c.Grace > 0 {
		return max(c.Grace, minStaleGrace)
	}
	return max(deadline.Sub(now), minStaleGrace)
}

// failUnsent fails r, still queued, with err, unless its caller gave up
// on it first: either way it is never sent.
func (r *Request) failUnsent(err error) {
	if r.state.CompareAndSwap(stQueued, stSent) {
		r.finish(Reply{}, err)
	}
}

// finish delivers the request's outcome; the first delivery wins.
func (r *Request) finish(rep Reply, err error) { r.finishAt(rep, time.Time{}, err) }

// finishAt is finish for a reply that the reader read off the connection
// at at: one clock read for every reply of that read, handed on for the
// node latency metric.
func (r *Request) finishAt(rep Reply, at time.Time, err error) {
	if r.fired.CompareAndSwap(false, true) {
		r.cb.Answer(rep, at, err)
		r.unref()
	}
}

// unref lets go of one hold on r (see refs): the last one tells a
// Releaser answerer that r may be reused. Nothing of the line touches r
// after its unref.
func (r *Request) unref() {
	if r.refs.Add(-1) == 0 {
		if rl, ok := r.cb.(Releaser); ok {
			rl.Released(r)
		}
	}
}

// unrefAll lets go of one hold on each of rs (see unref).
func unrefAll(rs []*Request) {
	for _, r := range rs {
		r.unref()
	}
}

// Conns is how many lines m shares.
func (m *Mux) Conns() int { return len(m.lines) }

// Line picks the connection of key: commands on one key keep their
// order on the wire, so a release can never overtake the SET it undoes.
func (m *Mux) Line(key string) *Line {
	return m.lines[maphash.String(m.seed, key)%uint64(len(m.lines))]
}

// Close stops every connection; requests in flight fail with ErrClosed.
func (m *Mux) Close() {
	for _, l := range m.lines {
		l.close()
	}
}

// Line is one connection slot: a writer goroutine that owns dialing and
// writing, and, per connection, a reader goroutine that pairs replies with
// requests in order.
type Line struct {
	cfg  *Config
	wake chan struct{} // buffered 1: the queue has work
	// warmReq (buffered 1) asks the writer to connect ahead of any command.
	warmReq chan struct{}
	stop    chan struct{}
	done    chan struct{} // the writer has ended
	// ctx ends with close, cutting a dial short.
	ctx    context.Context
	cancel context.CancelFunc

	live []*Request // the batch being written; the writer's own

	mu      sync.Mutex
	queue   []*Request
	cur     *wire // nil while disconnected
	closed  bool
	held    int // callers holding the writer back (hold.go)
	readers sync.WaitGroup
	sweeper // the deadlines of submitted requests; guarded by mu
}

// wire is one TCP connection of a line.
type wire struct {
	nc      net.Conn
	pending fifo // written, awaiting replies, oldest first
	dead    bool
	// fresh is set until the preload has been written.
	fresh bool
	// looked is set when the reader, finding the oldest request stale,
	// reads once more before resetting: a deadline wakes a Read without
	// looking at the socket, where replies may be waiting.
	looked bool
}

func (l *Line) enqueue(r *Request) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	// Only the first request of a batch wakes the writer: the writer takes
	// the whole queue once woken, so the ones behind it leave with it.
	// While the line is held (hold.go), its release wakes it.
	first := len(l.queue) == 0 && l.held == 0
	l.queue = append(l.queue, r)
	l.watch(l, r)
	l.mu.Unlock()
	if first {
		poke(l.wake)
	}
	return true
}

// poke wakes the goroutine that waits on ch (buffered 1) without ever
// blocking: a wake already pending covers this one.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// yieldBelow is the queue length under which the writer yields once
// before taking the batch.
const yieldBelow = 8

func (l *Line) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

func (l *Line) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	close(l.stop)
	<-l.done
}

// run is the writer: it takes everything queued since its last write and
// sends it in one write.
func (l *Line) run() {
	defer close(l.done)
	var batch []*Request
	var out []byte
	for {
		select {
		case <-l.warmReq:
			l.warm()
			continue
		case <-l.wake:
		case <-l.stop:
			l.shutdown()
			return
		}
		// With little queued, let the callers that are already runnable
		// queue their commands first: one write of many beats many writes
		// of one, and a write to a socket costs far more than the pause.
		// Not under load: the yield goes to the back of the global run
		// queue, which then holds thousands of goroutines, and the queue
		// is long enough to make a good batch anyway.
		if l.queued() < yieldBelow {
			runtime.Gosched()
		}
		l.mu.Lock()
		batch, l.queue = l.queue, batch[:0]
		l.mu.Unlock()
		out = l.send(batch, out[:0])
		clear(batch)
		clear(l.live)
		if cap(out) > 1<<20 {
			out = nil
		}
	}
}

// send writes the batch's live requests on the current connection, dialing
// one if needed.
func (l *Line) send(batch []*Request, out []byte) []byte {
	w, err := l.connect()
	now := time.Now() // the batch's one clock read, after any dial
	if err == nil && l.overdue(w, now) {
		// Its reader has not noticed yet; new requests must not queue
		// behind a reply that is not coming.
		l.reset(w, errStalled)
		w, err = l.connect()
		now = time.Now()
	}
	if err != nil {
		for _, r := range batch {
			r.failUnsent(err)
			r.unref()
		}
		return out
	}
	live := l.live[:0]
	var last time.Time
	for _, r := range batch {
		// A request already past its deadline fails unsent. Sending it
		// would only give the write a deadline in the past, and its
		// failure would reset the connection under everyone else.
		if !now.Before(r.deadline) {
			r.failUnsent(errExpired)
			r.unref()
			continue
		}
		if r.state.CompareAndSwap(stQueued, stSent) {
			r.grace = l.cfg.graceFor(r.deadline, now)
			out = append(out, r.Buf...)
			live = append(live, r)
			last = later(last, r.deadline)
		} else {
			r.unref() // abandoned by the sweep: it leaves the line unsent
		}
	}
	l.live = live // reused by the next batch: only the writer touches it
	if len(live) == 0 {
		return out
	}
	if w.fresh {
		w.fresh = false
		out, live = l.preload(out, live)
	}
	// The write gets until the last caller gives up; a server that does
	// not take the bytes by then is stalled, and the connection is reset.
	l.write(w, live, out, last)
	return out
}

// write sends out, the bytes of reqs, on w with the write deadline dl,
// once they are tracked; a failed write resets w.
func (l *Line) write(w *wire, reqs []*Request, out []byte, dl time.Time) {
	if !l.track(w, reqs) {
		return
	}
	_ = w.nc.SetWriteDeadline(dl)
	if _, err := w.nc.Write(out); err != nil {
		l.reset(w, err)
	}
}

// preload puts the preload commands in front of a new connection's first
// batch, as requests whose replies are dropped, with the deadline of the
// batch's first request.
func (l *Line) preload(out []byte, live []*Request) ([]byte, []*Request) {
	pre := make([]*Request, 0, len(l.cfg.Preload)+len(live))
	var buf []byte
	for _, args := range l.cfg.Preload {
		r := &Request{deadline: live[0].deadline, grace: live[0].grace, cb: ignore{}}
		r.state.Store(stSent)
		r.refs.Store(2) // its answer and the line; never watched
		pre = append(pre, r)
		buf = resp.AppendCommand(buf, args)
	}
	return append(buf, out...), append(pre, live...)
}

// WarmUp asks every line to connect and write its preload now, ahead of
// any command; see warm.
func (m *Mux) WarmUp() {
	for _, l := range m.lines {
		poke(l.warmReq)
	}
}

// warm opens the line's connection before any command needs it and writes
// the preload on it, so that the first command after start-up pays for
// neither within its timeout. A failure here is not reported: the
// first command dials again.
func (l *Line) warm() {
	w, err := l.connect()
	if err != nil || !w.fresh {
		return
	}
	w.fresh = false
	dl := time.Now().Add(l.cfg.Timeout)
	anchor := &Request{deadline: dl, grace: minStaleGrace}
	out, pre := l.preload(nil, []*Request{anchor})
	pre = pre[:len(pre)-1] // the anchor only lends its deadline
	l.write(w, pre, out, dl)
}

// ignore is the answerer of a request whose reply nobody reads.
type ignore struct{}

func (ignore) Answer(Reply, time.Time, error) {}

// track appends written requests to the reply queue before the bytes
// leave, so the reader never sees a reply it cannot pair. When the queue
// was empty the read deadline starts from the oldest request.
func (l *Line) track(w *wire, live []*Request) bool {
	l.mu.Lock()
	dead := w.dead
	if !dead {
		if w.pending.len() == 0 {
			_ = w.nc.SetReadDeadline(live[0].stale())
		}
		w.pending.push(live)
	}
	l.mu.Unlock()
	if dead {
		// Outside the lock: a callback may submit again.
		for _, r := range live {
			r.finish(Reply{}, ErrConnReset)
			r.unref()
		}
	}
	return !dead
}

var (
	// ErrClosed fails every request submitted to a closed Mux, or still
	// waiting on it when it closed.
	ErrClosed = errors.New("backend: node closed")
	// ErrConnReset is wrapped by the error of every request that was
	// waiting on a connection when it was reset.
	ErrConnReset = errors.New("backend: connection reset")
	errStalled   = errors.New("oldest request overdue")
	errExpired   = fmt.Errorf("not sent: %w", context.DeadlineExceeded)
)

// overdue reports whether w's oldest request is stale at now.
func (l *Line) overdue(w *wire, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return w.pending.len() > 0 && !now.Before(w.pending.front().stale())
}

// connect returns the current connection, dialing a new one after a reset.
func (l *Line) connect() (*wire, error) {
	l.mu.Lock()
	w := l.cur
	l.mu.Unlock()
	if w != nil {
		return w, nil
	}
	nc, err := l.cfg.Open(l.ctx)
	if err != nil {
		return nil, err
	}
	w = &wire{nc: rawio.Wrap(nc), fresh: len(l.cfg.Preload) > 0}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	l.cur = w
	l.readers.Add(1)
	l.mu.Unlock()
	go l.read(w)
	return w, nil
}

// Open dials a connection, runs the handshake (AUTH, SELECT) on it and
// then the connected hook, before any request can be queued behind it,
// all within cfg.Timeout. Every connection of a node, whatever it
// carries, is opened here.
func (cfg *Config) Open(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	nc, err := cfg.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("backend: dial: %w", err)
	}
	if len(cfg.Handshake) > 0 {
		dl, _ := ctx.Deadline()
		_ = nc.SetDeadline(dl)
		if err := handshake(nc, cfg.Handshake); err != nil {
			nc.Close()
			return nil, err
		}
		_ = nc.SetDeadline(time.Time{})
	}
	if cfg.Connected != nil {
		if err := cfg.Connected(ctx, nc); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return nc, nil
}

func handshake(nc net.Conn, cmds [][]string) error {
	reps, err := RoundTrip(nc, cmds...)
	if err != nil {
		return fmt.Errorf("backend: handshake: %w", err)
	}
	for _, r := range reps {
		if err := r.Err(); err != nil {
			return err
		}
	}
	return nil
}

// RoundTrip sends cmds in one write on a connection that nothing else uses
// yet and reads their replies.
func RoundTrip(nc net.Conn, cmds ...[]string) ([]Reply, error) {
	var out []byte
	for _, args := range cmds {
		out = resp.AppendCommand(out, args)
	}
	if _, err := nc.Write(out); err != nil {
		return nil, err
	}
	c := &Conn{NC: nc}
	reps := make([]Reply, len(cmds))
	for i := range reps {
		var err error
		if reps[i], err = c.Read(); err != nil {
			return nil, err
		}
	}
	return reps, nil
}

// read pairs replies with requests, oldest first. Its read deadline is when
// the oldest request goes stale: if that passes with it unanswered, nothing
// behind it can be answered either (replies come in order), so the
// connection is stalled and is reset; later requests get a fresh one.
func (l *Line) read(w *wire) {
	defer l.readers.Done()
	buf := make([]byte, 0, readBufSize)
	var p paired
	for {
		var err error
		if buf, err = l.deliver(w, buf, &p); err != nil {
			l.reset(w, err)
			return
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow for a reply larger than the buffer
		}
		n, err := w.nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 {
			w.looked = false
		}
		if err != nil && !(errors.Is(err, os.ErrDeadlineExceeded) && l.rearm(w)) {
			l.reset(w, err)
			return
		}
	}
}

// paired is the reader's own scratch space: the replies of one read and
// their requests, kept between reads so that pairing allocates nothing.
type paired struct {
	reps []Reply
	reqs []*Request // nil where a reply is one the request skips
	// left are the requests that left the replies awaited in this read,
	// and those answered that still await replies after their answer: the
	// reader lets go of them once their replies were delivered.
	left []*Request
}

// maxPairedKept is the most replies' room the reader keeps between reads:
// a burst of more does not pin its memory afterwards.
const maxPairedKept = 1024

// reset empties p for the next read, dropping what it pointed to.
func (p *paired) reset() {
	if cap(p.reps) > maxPairedKept {
		p.reps, p.reqs, p.left = nil, nil, nil
		return
	}
	clear(p.reps)
	clear(p.reqs)
	clear(p.left)
	p.reps, p.reqs, p.left = p.reps[:0], p.reqs[:0], p.left[:0]
}

// deliver hands every whole reply in buf to its request and returns the
// unparsed rest, moved to the front. The replies of one read are paired
// with their requests under one lock, and share one reading of the clock.
func (l *Line) deliver(w *wire, buf []byte, p *paired) ([]byte, error) {
	off := 0
	var perr error
	for {
		rep, n, err := ParseReply(buf[off:])
		if err != nil {
			perr = err
			break
		}
		if n == 0 {
			break
		}
		off += n
		p.reps = append(p.reps, rep)
	}
	if len(p.reps) == 0 {
		return buf, perr
	}
	unasked := l.pair(w, p)
	now := time.Now()
	for i, r := range p.reqs {
		switch {
		case r == nil:
		case !now.Before(r.deadline):
			// Its caller's time was up before the reply was read.
			r.finishAt(Reply{}, now, context.DeadlineExceeded)
		default:
			r.finishAt(p.reps[i], now, nil)
		}
	}
	unrefAll(p.left)
	p.reset()
	if unasked {
		return buf, errProtocol // a reply nobody asked for
	}
	if perr != nil {
		return buf, perr
	}
	rest := copy(buf, buf[off:])
	return buf[:rest], nil
}

// pair takes, in one hold of the lock, the request of each reply in p.reps
// (nil for a reply its request skips) into p.reqs; true when a reply came
// that nobody asked for, p.reqs then stopping short of it.
func (l *Line) pair(w *wire, p *paired) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range p.reps {
		r, ok := l.pop(w, p)
		if !ok {
			return true
		}
		p.reqs = append(p.reqs, r)
	}
	return false
}

// pop returns the oldest request, or nil while this reply is one it skips
// or drops after its answer (it stays the oldest until its last); false
// when none is waiting. A request that leaves the replies awaited goes to
// p.left, and so does one answered while it stays, with a hold of the
// reader's own. l.mu is held.
func (l *Line) pop(w *wire, p *paired) (*Request, bool) {
	if w.pending.len() == 0 {
		return nil, false
	}
	r := w.pending.front()
	switch {
	case r.Skip > 0:
		r.Skip--
		return nil, true
	case r.After < 0: // answered: a reply it drops after its answer
		if r.After++; r.After == 0 {
			w.pending.pop()
			p.left = append(p.left, r)
		}
		return nil, true
	case r.After > 0: // the answer; the request stays for what follows
		// The reader holds it until the answer was delivered: a reset
		// can take it from pending meanwhile, and let go of the line's
		// hold.
		r.After = -r.After
		r.refs.Add(1)
		p.left = append(p.left, r)
		return r, true
	}
	w.pending.pop()
	p.left = append(p.left, r)
	return r, true
}

// rearm decides what a read deadline means: false when the oldest request
// is stale (a stall: reset), true after moving the deadline on (the
// requests it was set for have been answered).
func (l *Line) rearm(w *wire) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.pending.len() == 0 {
		_ = w.nc.SetReadDeadline(time.Time{})
		return true
	}
	oldest := w.pending.front().stale()
	if now := time.Now(); !now.Before(oldest) {
		if w.looked {
			return false
		}
		w.looked = true
		_ = w.nc.SetReadDeadline(now.Add(time.Millisecond))
		return true
	}
	_ = w.nc.SetReadDeadline(oldest)
	return true
}

// reset closes w and fails every request still waiting on it. Safe to call
// more than once.
func (l *Line) reset(w *wire, cause error) {
	l.mu.Lock()
	if w.dead {
		l.mu.Unlock()
		return
	}
	w.dead = true
	pending := w.pending.take()
	if l.cur == w {
		l.cur = nil
	}
	l.mu.Unlock()
	abort(w.nc)
	err := fmt.Errorf("%w: %w", ErrConnReset, cause)
	for _, r := range pending {
		r.finish(Reply{}, err)
		r.unref()
	}
}

// abort closes nc at once, dropping whatever the server has not taken
// yet: the requests on it have been failed as unanswered, and a later
// command (the next round of the same token, on a new connection) must
// never be overtaken by one of them. A plain close would leave TCP
// retransmitting them, after a partition heals, behind that command.
func abort(nc net.Conn) {
	raw := nc
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		raw = tc.NetConn()
	}
	if tc, ok := raw.(interface{ SetLinger(sec int) error }); ok {
		_ = tc.SetLinger(0) // a *net.TCPConn, or its rawio form
	}
	_ = nc.Close()
}

// shutdown fails what is queued, closes the connection and waits for its
// reader.
func (l *Line) shutdown() {
	l.mu.Lock()
	queue, w := l.queue, l.cur
	l.queue = nil
	l.stopSweeper()
	l.mu.Unlock()
	for _, r := range queue {
		r.failUnsent(ErrClosed)
		r.unref()
	}
	if w != nil {
		l.reset(w, ErrClosed)
	}
	l.readers.Wait()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// fifo is a queue of requests that reuses its array: taken from the front,
// added at the back, and moved back to the front when the back is full,
// so a line that is never drained under load does not reallocate.
type fifo struct {
	buf  []*Request
	head int
}

func (q *fifo) len() int        { return len(q.buf) - q.head }
func (q *fifo) front() *Request { return q.buf[q.head] }

func (q *fifo) pop() {
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
}

func (q *fifo) push(rs []*Request) {
	if q.head > 0 && len(q.buf)+len(rs) > cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, rs...)
}

// take empties the queue and returns what it held.
func (q *fifo) take() []*Request {
	rs := q.buf[q.head:]
	q.buf, q.head = nil, 0
	return rs
}
