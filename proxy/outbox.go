package proxy

import "sync"

// DefaultMaxPubSubBytes is Options.MaxPubSubBytes's default: Redis's
// hard client-output-buffer-limit for pub/sub clients.
const DefaultMaxPubSubBytes = 32 << 20

// outFrame is one message on its way to the client; live says whether
// the connection still subscribes to it when its turn to be written
// comes, so that a message never follows the confirmation of its
// unsubscription.
type outFrame struct {
	b    []byte
	live func() bool
}

// outbox carries the messages of a connection's subscriptions and its
// invalidations. They arrive on the goroutines of the backends and must
// not wait for the client: they queue here, and a goroutine of the
// connection's own, made with the first message, writes them between
// replies. A message goes out only at a point where every reply the
// client is owed for the commands that finished before it has been
// written, as Redis writes them: while a batch of the connection runs
// they are held (a SUBSCRIBE's confirmation reaches the client before
// the messages it brings, a read's reply before the invalidation of what
// it read), and while a batch that may block waits, they are held as long
// as replies are owed (see owe). Past limit bytes waiting, the connection
// is closed, as Redis closes a pub/sub client past its output buffer
// limit.
type outbox struct {
	st    *connState
	limit int
	onCut func() // logs the cut

	mu      sync.Mutex
	frames  []outFrame
	size    int
	held    bool
	owed    int // replies that must be written before any message (see owe)
	closed  bool
	running bool
	wake    chan struct{}
	done    chan struct{}
}

func newOutbox(st *connState, limit int, onCut func()) *outbox {
	if limit <= 0 {
		limit = DefaultMaxPubSubBytes
	}
	return &outbox{st: st, limit: limit, onCut: onCut, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues a message, or cuts the client off past the limit.
func (o *outbox) add(f outFrame) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if o.size+len(f.b) > o.limit {
		o.closed = true
		o.frames, o.size = nil, 0
		o.mu.Unlock()
		o.st.nc.Close()
		o.onCut()
		return
	}
	o.frames = append(o.frames, f)
	o.size += len(f.b)
	if !o.running {
		o.running = true
		go o.run()
	}
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// hold stops (true) or resumes (false) the writing of messages. A
// connection state made without an outbox (tests that drive serveBatch
// directly) has none to hold.
func (o *outbox) hold(on bool) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.held = on
	o.mu.Unlock()
	if !on {
		o.signal()
	}
}

// owe counts n replies that the messages must wait for even while they are
// not held: the replies of commands of a batch that may block, from when
// the commands start (those that do not block: a read in flight may
// answer with what a message invalidates) or finish (those that wait, so
// that messages still flow while they wait), until the replies are
// written (paid).
func (o *outbox) owe(n int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.owed += n
	o.mu.Unlock()
}

// paid counts n owed replies written.
func (o *outbox) paid(n int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.owed -= n
	free := o.owed == 0
	o.mu.Unlock()
	if free {
		o.signal()
	}
}

// close ends the writer once the connection is closed, and waits for it.
func (o *outbox) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.closed = true
	running := o.running
	o.mu.Unlock()
	o.signal()
	if running {
		<-o.done
	}
}

// run writes the queued messages until the outbox is closed.
func (o *outbox) run() {
	defer close(o.done)
	for range o.wake {
		frames, closed := o.take()
		if closed {
			return
		}
		if len(frames) > 0 && !o.write(frames) {
			o.st.nc.Close()
		}
	}
}

// take returns what may be written now.
func (o *outbox) take() ([]outFrame, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.held || o.owed > 0 {
		return nil, o.closed
	}
	f := o.frames
	o.frames = nil
	return f, false
}

// write writes frames under the connection's write lock, then counts
// them out of the limit; false when the write failed.
func (o *outbox) write(frames []outFrame) bool {
	var buf []byte
	n := 0
	o.st.wmu.Lock()
	for _, f := range frames {
		n += len(f.b)
		if f.live() {
			buf = append(buf, f.b...)
		}
	}
	_, err := o.st.nc.Write(buf)
	o.st.wmu.Unlock()
	o.mu.Lock()
	o.size -= n
	o.mu.Unlock()
	return err == nil
}
