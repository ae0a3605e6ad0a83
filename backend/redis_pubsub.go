package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// errSubDown is in the error of a Subscribe that the server did not
// confirm in time (its subscription connection is down or slow): the
// subscription is kept, and made on the server when the connection is
// back.
var errSubDown = errors.New("subscription connection down; restored on reconnect")

// subTopic is a channel or a pattern the node is subscribed to.
type subTopic struct {
	pattern bool
	name    string
}

// verb is the command that subscribes (on) or unsubscribes the topic.
func (t subTopic) verb(on bool) string {
	v := "subscribe"
	if !on {
		v = "unsubscribe"
	}
	if t.pattern {
		v = "p" + v
	}
	return v
}

// subWait is a Subscribe or Unsubscribe waiting for the server's
// confirmation, answered once: by it, by its deadline, or by the loss of
// the connection. Its deadline's timer is left to fire (within the node
// timeout) rather than stopped: the timer may fire before send has even
// stored it.
type subWait struct {
	once sync.Once
	rcv  quorum.Receiver
}

func (sw *subWait) answer(rep quorum.Reply) {
	sw.once.Do(func() { sw.rcv.Receive(rep) })
}

// clientSubs are the node's subscriptions for the clients' pub/sub,
// carried by the subscription connection beside the release channel.
type clientSubs struct {
	mu      sync.Mutex
	c       *wire.Conn // the live subscription connection; nil while down
	counts  map[subTopic]int
	waiting map[string][]*subWait // by verb and name, oldest first
	message []func(channel, pattern, payload string)
}

// change runs a Subscribe (on) or an Unsubscribe of cmd's topic.
func (s *clientSubs) change(deadline time.Time, cmd quorum.Cmd, on bool, rcv quorum.Receiver) {
	t := subTopic{pattern: cmd.N == 1, name: cmd.Key}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = make(map[subTopic]int)
	}
	n := s.counts[t]
	switch {
	case on:
		s.counts[t] = n + 1
	case n > 1:
		s.counts[t] = n - 1
	case n == 1:
		delete(s.counts, t)
	}
	if (on && n > 0) || (!on && (n != 1 || s.c == nil)) {
		// The server's state is unchanged, or (an Unsubscribe while the
		// connection is down) will be once it reconnects without it.
		rcv.Receive(quorum.Reply{OK: true})
		return
	}
	s.wait(deadline, t.verb(on), t.name, rcv)
	if s.c == nil {
		return // connected subscribes it, and its confirmation answers
	}
	if !deadline.IsZero() {
		_ = s.c.NC.SetWriteDeadline(deadline)
	}
	if err := s.c.Write(t.verb(on), t.name); err != nil {
		_ = s.c.NC.Close() // the loop reconnects, and subscribes again
	}
}

// wait makes rcv wait for the server's confirmation of verb on name, or
// for the deadline; s.mu is held.
func (s *clientSubs) wait(deadline time.Time, verb, name string, rcv quorum.Receiver) {
	sw := &subWait{rcv: rcv}
	key := verb + " " + name
	if s.waiting == nil {
		s.waiting = make(map[string][]*subWait)
	}
	s.waiting[key] = append(s.waiting[key], sw)
	if !deadline.IsZero() {
		err := fmt.Errorf("backend: %s: no confirmation by the deadline (%w): %w", verb, errSubDown, context.DeadlineExceeded)
		time.AfterFunc(time.Until(deadline), func() { sw.answer(quorum.Reply{Err: err}) })
	}
}

// connected makes c the subscription connection and subscribes it to
// the release channels and every topic.
func (s *clientSubs) connected(c *wire.Conn, release []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c = c
	chans, pats := append([]string{"subscribe"}, release...), []string{"psubscribe"}
	for t := range s.counts {
		if t.pattern {
			pats = append(pats, t.name)
		} else {
			chans = append(chans, t.name)
		}
	}
	if len(chans) > 1 {
		if err := c.Write(chans...); err != nil {
			return err
		}
	}
	if len(pats) > 1 {
		return c.Write(pats...)
	}
	return nil
}

// disconnected forgets the connection and fails what waited on it.
func (s *clientSubs) disconnected() {
	s.mu.Lock()
	waiting := s.waiting
	s.c, s.waiting = nil, nil
	s.mu.Unlock()
	// A Subscribe is kept for the next connection even so: only its
	// answer is an error.
	for key, ws := range waiting {
		for _, sw := range ws {
			sw.answer(quorum.Reply{Err: fmt.Errorf("backend: %s: %w", key, errSubDown)})
		}
	}
}

// ping writes a PING on the live connection, under the lock that orders
// every write of it.
func (s *clientSubs) ping(c *wire.Conn, deadline time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = c.NC.SetWriteDeadline(deadline)
	return c.Write("ping")
}

// confirmed answers the oldest change waiting for the server's
// confirmation rep (["subscribe", name, count] and the like).
func (s *clientSubs) confirmed(verb, name string) {
	key := verb + " " + name
	s.mu.Lock()
	ws := s.waiting[key]
	var sw *subWait
	if len(ws) > 0 {
		sw = ws[0]
		if len(ws) == 1 {
			delete(s.waiting, key)
		} else {
			s.waiting[key] = ws[1:]
		}
	}
	s.mu.Unlock()
	if sw != nil {
		sw.answer(quorum.Reply{OK: true})
	}
}

func (s *clientSubs) addWatcher(fn func(channel, pattern, payload string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.message = append(s.message, fn)
}

func (s *clientSubs) deliver(channel, pattern, payload string) {
	s.mu.Lock()
	fns := s.message
	s.mu.Unlock()
	for _, fn := range fns {
		fn(channel, pattern, payload)
	}
}
