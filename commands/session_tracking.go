package commands

import (
	"strings"
	"sync/atomic"
)

// trackState is a connection's client-side caching (CLIENT TRACKING).
type trackState struct {
	on, bcast, optin, optout, noloop bool
	// broken: the client that invalidations are redirected to is gone.
	broken   bool
	redirect int64
	prefixes []string
	// caching is CLIENT CACHING YES (+1) or NO (-1), for the next command
	// (or, in MULTI, the transaction).
	caching int8
}

// sessionTracking is what a Session needs for client-side caching: its
// state, whether it is on (read without the lock by every command), and
// how invalidations reach the client.
type sessionTracking struct {
	state   trackState
	enabled atomic.Bool
	// lookup finds another session by ID, for REDIRECT.
	lookup func(id int64) (*Session, bool)
	// send writes an invalidation to the connection out of band: a
	// "invalidate" push in RESP3, a message of __redis__:invalidate in
	// RESP2; nil until the proxy sets it.
	send func(keys []string)
	// broken writes the RESP3 push ["tracking-redir-broken", id].
	broken func(id int64)
}

// SetInvalidate gives the session a way to send its client the
// invalidations of client-side caching, between replies: a RESP3
// connection gets the push ["invalidate", keys], a RESP2 connection the
// message ["message", "__redis__:invalidate", keys]; nil keys are a null
// (everything may have changed). It must be safe to call from any
// goroutine and must not block. broken, likewise, writes the RESP3 push
// ["tracking-redir-broken", id] (an integer id): what a client is told,
// as Redis tells it, when the connection its invalidations go to is
// gone.
func (s *Session) SetInvalidate(send func(keys []string), broken func(id int64)) {
	s.mu.Lock()
	s.tracking.send, s.tracking.broken = send, broken
	s.mu.Unlock()
}

// Invalidate implements tracking.Client: it tells the session's client,
// or the client it redirects to, that keys may have changed.
func (s *Session) Invalidate(keys []string) {
	s.mu.Lock()
	st := s.tracking.state
	lookup := s.tracking.lookup
	s.mu.Unlock()
	if !st.on {
		return
	}
	target := s
	if st.redirect > 0 {
		t, ok := lookup(st.redirect)
		if !ok {
			s.mu.Lock()
			s.tracking.state.broken = true
			broken, resp3 := s.tracking.broken, s.proto.Load() == 3
			s.mu.Unlock()
			if broken != nil && resp3 {
				broken(st.redirect)
			}
			return
		}
		target = t
	}
	target.sendInvalidation(keys, st.redirect > 0)
}

// sendInvalidation writes an invalidation to s's own connection. A RESP2
// connection can only take it as a pub/sub message, when it is the
// target of a REDIRECT and subscribed (Redis sends it on
// __redis__:invalidate then); otherwise it is dropped, as Redis drops it.
func (s *Session) sendInvalidation(keys []string, redirected bool) {
	s.mu.Lock()
	send := s.tracking.send
	resp2 := s.proto.Load() != 3
	subscribed := len(s.subs.channels)+len(s.subs.patterns) > 0
	s.mu.Unlock()
	if send == nil || (resp2 && !(redirected && subscribed)) {
		return
	}
	send(keys)
}

// tracksReads reports whether the command about to run should have its
// keys tracked, as Redis's trackingRememberKeys decides: tracking on, not
// in BCAST mode, and OPTIN with CACHING YES, OPTOUT without CACHING NO,
// or neither.
func (s *Session) tracksReads() bool {
	if !s.tracking.enabled.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.tracking.state
	switch {
	case !st.on || st.bcast:
		return false
	case st.optin:
		return st.caching > 0
	case st.optout:
		return st.caching >= 0
	}
	return true
}

// CachingPending reports whether a CLIENT CACHING word waits for the next
// command: the command after it must then run alone, as the word is its
// own, and the one after that must not see it.
func (s *Session) CachingPending() bool {
	if !s.tracking.enabled.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tracking.state.caching != 0
}

// commandDone clears CLIENT CACHING's word after a command, as Redis
// does: unless the command was CLIENT itself, or the connection is in
// MULTI (the word then covers the transaction).
func (s *Session) commandDone(cmd *command) {
	if !s.tracking.enabled.Load() || cmd.name == "client" {
		return
	}
	s.mu.Lock()
	if s.txn == nil {
		s.tracking.state.caching = 0
	}
	s.mu.Unlock()
}

// trackingFlags are CLIENT TRACKINGINFO's flags.
func (st trackState) flags() []string {
	if !st.on {
		return []string{"off"}
	}
	f := []string{"on"}
	add := func(on bool, name string) {
		if on {
			f = append(f, name)
		}
	}
	add(st.bcast, "bcast")
	add(st.optin, "optin")
	add(st.optout, "optout")
	add(st.optin && st.caching > 0, "caching-yes")
	add(st.optout && st.caching < 0, "caching-no")
	add(st.noloop, "noloop")
	add(st.broken, "broken_redirect")
	return f
}

// prefixOverlap is the first pair of prefixes of which one starts the
// other, as Redis refuses them.
func prefixOverlap(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// noLoop reports whether the connection tracks with NOLOOP: its own
// writes are then not reported to it (see Handler.ownWrite).
func (s *Session) noLoop() bool {
	if !s.tracking.enabled.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tracking.state.on && s.tracking.state.noloop
}

// ownWrite tells client-side caching, before a command of a connection
// with NOLOOP runs, what a write leaves on a node where it changes a key:
// one of its arguments after the keys (a SET's value, a token, a script's
// ARGV), or no key for a delete. A node's report of the key is then left
// out for this connection where the node shows that (tracking.Table.Own).
// A read of the key ends that: changes after it are told, as Redis tells
// them.
func (h *Handler) ownWrite(s *Session, cmd *command, args [][]byte) {
	if cmd.keys == keysNone || !s.noLoop() {
		return
	}
	keys, ok := keyArgs(cmd.keys, args)
	if !ok || len(keys) == 0 {
		return
	}
	if !cmd.write {
		h.tracking.Disown(s, strs(keys))
		return
	}
	var values [][]byte
	switch cmd.keys {
	case keysEval:
		values = args[3+len(keys):]
	case keyFirst:
		values = args[2:]
	}
	h.tracking.Own(s, s.DB(), strs(keys), strs(values), cmd.deletes)
}
