package faults

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a Proxy does to the traffic it forwards.
type Mode int

const (
	// Pass forwards both ways unchanged.
	Pass Mode = iota
	// Delay holds every request chunk for the proxy's delay before
	// forwarding it, so the command reaches the server late (in order).
	Delay
	// Blackhole reads requests and drops them; no reply ever comes, and
	// replies already on their way are dropped too.
	Blackhole
	// ResetReply forwards requests, then sends only the first half of the
	// next reply chunk and resets the client connection (RST).
	ResetReply
	// ErrorReply answers every complete command itself with the proxy's
	// error line, without forwarding it.
	ErrorReply
	// Refuse resets new and open connections at once.
	Refuse
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one backend address.
type Proxy struct {
	ln      net.Listener
	backend string

	mode   atomic.Int32
	delay  atomic.Int64 // nanoseconds, for Delay
	errMsg atomic.Value // string, for ErrorReply
	seen   atomic.Value // func([]byte), told of every request chunk

	mu     sync.Mutex
	links  map[*link]struct{}
	closed bool
	quit   chan struct{}
	wg     sync.WaitGroup
}

// Listen starts a proxy to backend on a free loopback port.
func Listen(backend string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, backend: backend, links: map[*link]struct{}{}, quit: make(chan struct{})}
	p.errMsg.Store("ERR injected by faults proxy")
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients dial instead of the backend's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode; it applies to open connections from their next
// chunk on. Switching to Refuse also resets every open connection.
func (p *Proxy) Set(m Mode) {
	p.mode.Store(int32(m))
	if m == Refuse {
		p.resetAll()
	}
}

// SetDelay switches to Delay with delay d.
func (p *Proxy) SetDelay(d time.Duration) {
	p.delay.Store(int64(d))
	p.Set(Delay)
}

// SetError switches to ErrorReply answering msg (without the leading '-'),
// e.g. "LOADING Redis is loading the dataset in memory".
func (p *Proxy) SetError(msg string) {
	p.errMsg.Store(msg)
	p.Set(ErrorReply)
}

// OnRequest has f told of every request chunk as it arrives, before the
// mode acts on it: a test learns that a command is on its way (held by a
// Delay, say). f runs on the connection's pump and must not block.
func (p *Proxy) OnRequest(f func([]byte)) { p.seen.Store(f) }

func (p *Proxy) current() Mode { return Mode(p.mode.Load()) }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. Safe to call twice.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.quit)
	links := p.snapshot()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) snapshot() []*link {
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	return out
}

func (p *Proxy) resetAll() {
	p.mu.Lock()
	links := p.snapshot()
	p.mu.Unlock()
	for _, l := range links {
		l.reset()
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if p.current() == Refuse {
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the backend for one client and pumps both directions until
// either side ends.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.backend, time.Second)
	if err != nil {
		resetConn(client)
		return
	}
	l := &link{p: p, client: client, server: server}
	if !p.add(l) {
		l.close()
		return
	}
	defer p.remove(l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.pumpReplies()
	}()
	l.pumpRequests()
	l.close()
	<-done
}

func (p *Proxy) add(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// link is one proxied connection.
type link struct {
	p              *Proxy
	client, server net.Conn
	wmu            sync.Mutex // client writes come from both pumps
	once           sync.Once
	cmds           cmdCounter
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.server.Close()
	})
}

func (l *link) reset() {
	l.once.Do(func() {
		resetConn(l.client)
		l.server.Close()
	})
}

// resetConn closes c with an RST instead of a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (l *link) pumpRequests() {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(buf)
		if n > 0 && !l.request(buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// request handles one chunk from the client; false ends the link.
func (l *link) request(b []byte) bool {
	if f, ok := l.p.seen.Load().(func([]byte)); ok {
		f(b)
	}
	switch l.p.current() {
	case Blackhole:
		return true
	case Refuse:
		l.reset()
		return false
	case ErrorReply:
		return l.answerErrors(b)
	case Delay:
		if !l.wait(time.Duration(l.p.delay.Load())) {
			return false
		}
	}
	_, err := l.server.Write(b)
	return err == nil
}

// wait pauses the request pump; the pause is the injected fault.
func (l *link) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.p.quit:
		return false
	}
}

func (l *link) answerErrors(b []byte) bool {
	n, ok := l.cmds.feed(b)
	if !ok {
		l.reset()
		return false
	}
	msg := "-" + l.p.errMsg.Load().(string) + "\r\n"
	for range n {
		if !l.writeClient([]byte(msg)) {
			return false
		}
	}
	return true
}

func (l *link) pumpReplies() {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		if n > 0 && !l.reply(buf[:n]) {
			l.close()
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.reset()
			} else {
				l.close()
			}
			return
		}
	}
}

func (l *link) reply(b []byte) bool {
	switch l.p.current() {
	case Blackhole:
		return true
	case ResetReply:
		if len(b) > 1 {
			l.writeClient(b[:len(b)/2])
		}
		l.reset()
		return false
	}
	return l.writeClient(b)
}

func (l *link) writeClient(b []byte) bool {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_, err := l.client.Write(b)
	return err == nil
}
