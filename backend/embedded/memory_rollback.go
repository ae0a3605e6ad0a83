package embedded

import "time"

// What the node keeps of a client script's run beside what the scripts
// keep: each key as the run found it, so that a run stopped at its
// deadline leaves nothing behind. A real Redis server cannot stop a
// script midway; this node can, and then takes back what the run wrote.
// The record that UndoEval and ForgetEval act on is the mark the
// production scripts keep (backend's redis_eval.go), run on this node's
// engine like any kind's script.

// memState is a key as a script found it: absent, a string, or a hash (a
// copy), with its expiry.
type memState struct {
	present bool
	str     string
	hash    *memHash // nil for a string
	expires time.Time
}

// stateOf reads key's live state, copying a hash so that later writes do
// not change it.
func (s *memOp) stateOf(key string) memState {
	e, h, ok := s.m.lookup(key, s.now)
	switch {
	case !ok:
		return memState{}
	case h != nil:
		return memState{present: true, hash: h.clone(), expires: h.expires}
	}
	return memState{present: true, str: e.token, expires: e.expires}
}

// restore puts key back to st.
func (s *memOp) restore(key string, st memState) {
	switch {
	case !st.present:
		s.dropPhys(key, false)
	case st.hash != nil:
		s.m.putHash(key, st.hash.clone())
	default:
		s.m.store(key, st.str, st.expires)
	}
}

// rollback puts back every key a script wrote, when it was stopped at its
// deadline (so that a late answer leaves nothing behind), and forgets
// the releases it would have announced and the messages it would have
// published.
func (r *luaRun) rollback() {
	for i := len(r.touched) - 1; i >= 0; i-- {
		r.s.restore(r.touched[i].key, r.touched[i].before)
	}
	r.s.announce, r.s.published = nil, nil
}

// limit is what an unmarked run leaves beside its reply, where no after
// step runs (a Redis node runs none either, and quorum sends an unmarked
// Eval only for a script that does not write or has no keys): every key
// the script left without expiry gets the command's Limit, and the
// result is the longest ttl among the keys it wrote (negative when one
// keeps no expiry).
func (r *luaRun) limit() (longest time.Duration) {
	s := r.s
	for _, t := range r.touched {
		e, _, ok := s.m.lookup(t.key, s.now)
		if !ok {
			continue
		}
		if e.expires.Equal(memNoExpiry) && s.c.Limit > 0 {
			e.expires = s.now.Add(s.c.Limit)
			r.setExpiry(t.key, e.expires)
		}
		if e.expires.Equal(memNoExpiry) || longest < 0 {
			longest = -1
			continue
		}
		longest = max(longest, e.expires.Sub(s.now))
	}
	return longest
}
