package embedded

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// memState is a key as a script found or left it: absent, a string, or a
// hash (a copy), with its expiry.
type memState struct {
	present bool
	str     string
	hash    *memHash // nil for a string
	expires time.Time
}

func (a memState) equal(b memState) bool {
	switch {
	case a.present != b.present:
		return false
	case !a.present:
		return true
	case (a.hash == nil) != (b.hash == nil):
		return false
	case a.hash != nil:
		return a.hash.equal(b.hash)
	}
	return a.str == b.str && a.expires.Equal(b.expires)
}

// evalRecord is how a marked Eval found and left the keys it wrote, kept
// until expires for UndoEval.
type evalRecord struct {
	expires time.Time
	keys    []evalKey
}

type evalKey struct {
	key           string // the node's key
	before, after memState
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

// restore puts key back to st. Deleting a key that a script created is a
// release, announced to its waiters like any other.
func (s *memOp) restore(key string, st memState) {
	switch {
	case !st.present:
		s.dropPhys(key, true)
	case st.hash != nil:
		s.m.putHash(key, st.hash.clone())
	default:
		s.m.store(key, st.str, st.expires)
	}
}

// undoEval is quorum.UndoEval.
func (s *memOp) undoEval() quorum.Reply {
	rec := s.m.scripts.records[s.c.Mark]
	delete(s.m.scripts.records, s.c.Mark)
	if rec == nil || !s.now.Before(rec.expires) {
		return quorum.Reply{}
	}
	undone := false
	for _, k := range rec.keys {
		if k.before.equal(k.after) || !s.stateOf(k.key).equal(k.after) {
			continue // unchanged by the script, or changed since
		}
		s.restore(k.key, k.before)
		undone = true
	}
	return quorum.Reply{OK: undone}
}

// forgetEval is quorum.ForgetEval.
func (s *memOp) forgetEval() quorum.Reply {
	_, ok := s.m.scripts.records[s.c.Mark]
	delete(s.m.scripts.records, s.c.Mark)
	return quorum.Reply{OK: ok}
}

// rollback puts back every key a script wrote, when it was stopped at its
// deadline (so that a late answer leaves nothing behind) or set an expiry
// past Max, and forgets the releases it would have announced and the
// messages it would have published.
func (r *luaRun) rollback() {
	for i := len(r.touched) - 1; i >= 0; i-- {
		r.s.restore(r.touched[i].key, r.touched[i].before)
	}
	r.s.announce, r.s.published = nil, nil
}

// finish gives every key the script left without expiry the command's
// Limit, holds every expiry the script set to Max (past it the run is
// taken back: over), records the run at Mark, and returns the reply's
// parts: the longest ttl among the keys it wrote (negative when one keeps
// no expiry), what the run changed (quorum.Reply.Effect) and, per key of
// Keys, whether the script set its expiry.
func (r *luaRun) finish() (longest time.Duration, effect string, timed []bool, over bool) {
	s := r.s
	keys := make([]evalKey, 0, len(r.touched))
	own := map[string]bool{}
	for _, t := range r.touched {
		after := s.stateOf(t.key)
		own[t.key] = after.present
		if after.present && after.expires.Equal(memNoExpiry) && s.c.Limit > 0 {
			after.expires = s.now.Add(s.c.Limit)
			r.setExpiry(t.key, after.expires)
			own[t.key] = false
		}
		if after.present {
			longest = longerTTL(longest, after.expires.Sub(s.now), after.expires.Equal(memNoExpiry))
		}
		keys = append(keys, evalKey{key: t.key, before: t.before, after: after})
	}
	changed := slices.DeleteFunc(slices.Clone(keys), func(k evalKey) bool { return k.before.equal(k.after) })
	if slices.ContainsFunc(changed, r.pastMax) {
		r.rollback()
		return 0, "", nil, true
	}
	if s.c.Mark == "" {
		return longest, "", nil, false
	}
	if len(changed) > 0 {
		r.record(keys, r.recordTTL(changed))
	}
	for _, key := range s.c.Keys {
		k := memKey(s.c.DB, key)
		i := slices.IndexFunc(changed, func(c evalKey) bool { return c.key == k })
		timed = append(timed, i >= 0 && own[k] && expiryChanged(changed[i]))
	}
	return longest, effectOf(changed), timed, false
}

func expiryChanged(k evalKey) bool {
	return k.after.present && !k.after.expires.Equal(k.before.expires)
}

// pastMax reports whether the run left k with an expiry of its own
// further than the command's Max from now.
func (r *luaRun) pastMax(k evalKey) bool {
	return r.s.c.Max > 0 && expiryChanged(k) && k.after.expires.Sub(r.s.now) > r.s.c.Max
}

// recordTTL is how long the record of a run that changed keys lives: until
// the last of them would expire by itself (a deleted key: when it would
// have), plus backend.EvalMarkSlack (as a Redis node's mark), within the command's TTL.
func (r *luaRun) recordTTL(changed []evalKey) time.Duration {
	var last time.Time
	for _, k := range changed {
		st := k.after
		if !st.present {
			st = k.before
		}
		if st.expires.Equal(memNoExpiry) {
			return r.s.c.TTL
		}
		if st.expires.After(last) {
			last = st.expires
		}
	}
	return min(r.s.c.TTL, max(last.Sub(r.s.now), 0)+backend.EvalMarkSlack)
}

// effectOf is the digest of how a run left the keys it changed: equal for
// two nodes exactly when they left each alike (its value, and whether it
// has an expiry), "" when it changed none.
func effectOf(changed []evalKey) string {
	if len(changed) == 0 {
		return ""
	}
	h := sha1.New()
	for _, k := range changed {
		st := k.after
		fmt.Fprintf(h, "%d:%s|%t|%t|", len(k.key), k.key, st.present, st.present && !st.expires.Equal(memNoExpiry))
		switch {
		case st.hash != nil:
			fields := slices.Clone(st.hash.fields)
			slices.SortFunc(fields, func(a, b memField) int { return strings.Compare(a.name, b.name) })
			for _, f := range fields {
				fmt.Fprintf(h, "%d:%s%d:%s", len(f.name), f.name, len(f.val), f.val)
			}
		case st.present:
			fmt.Fprintf(h, "%d:%s", len(st.str), st.str)
		}
		h.Write([]byte{';'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func longerTTL(cur, ttl time.Duration, none bool) time.Duration {
	if none || cur < 0 {
		return -1
	}
	return max(cur, ttl)
}

// record keeps keys at Mark for ttl. A repeated Eval of one mark keeps
// the earliest before-state of each key, so the undo goes back to where
// the first run started.
func (r *luaRun) record(keys []evalKey, ttl time.Duration) {
	s := r.s
	if old := s.m.scripts.records[s.c.Mark]; old != nil && s.now.Before(old.expires) {
		keys = mergeRecord(old.keys, keys)
	}
	if s.m.scripts.records == nil {
		s.m.scripts.records = make(map[string]*evalRecord)
	}
	s.m.scripts.records[s.c.Mark] = &evalRecord{expires: s.now.Add(ttl), keys: keys}
	s.m.wrote()
}

// mergeRecord is the record of two runs of one mark: the first run's
// before-states, the last state of each key.
func mergeRecord(old, cur []evalKey) []evalKey {
	merged := append([]evalKey(nil), old...)
	for _, k := range cur {
		i := slices.IndexFunc(merged, func(o evalKey) bool { return o.key == k.key })
		if i < 0 {
			merged = append(merged, k)
			continue
		}
		merged[i].after = k.after
	}
	return merged
}
