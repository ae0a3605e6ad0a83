package backend

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The fair queues of the in-memory node: per key (memKey), its entries in
// queue order, as the Redis node's sorted sets order them (by ticket,
// then by token). An entry whose expiry passed is not queued; a queue is
// dropped once it has no live entry. A free key with a queue is reserved
// for it as on a Redis node (see redis_fair.go): the key and its
// reservation key hold the same value until the queue's last entry
// expires.

// memFair maps a key (memKey) to its queue.
type memFair map[string][]memFairEntry

type memFairEntry struct {
	ticket  int64
	token   string
	expires time.Time
}

func compareFairEntries(a, b memFairEntry) int {
	return cmp.Or(cmp.Compare(a.ticket, b.ticket), cmp.Compare(a.token, b.token))
}

// fairLive is key's queue without its expired entries, which it drops.
func (s *memOp) fairLive(key string) []memFairEntry {
	if len(s.m.fair) == 0 {
		return nil // no queue anywhere: the common case of every release
	}
	k := memKey(s.c.DB, key)
	q := slices.DeleteFunc(s.m.fair[k], func(e memFairEntry) bool { return !s.now.Before(e.expires) })
	s.setFair(k, q)
	return q
}

func (s *memOp) setFair(k string, q []memFairEntry) {
	switch {
	case len(q) > 0 && s.m.fair == nil:
		s.m.fair = memFair{k: q}
	case len(q) > 0:
		s.m.fair[k] = q
	default:
		delete(s.m.fair, k)
	}
}

// fairQueued reports whether a live entry is queued for key.
func (s *memOp) fairQueued(key string) bool { return len(s.fairLive(key)) > 0 }

// fairPut queues token at ticket with an expiry d from now; an entry of
// token already queued keeps its ticket.
func (s *memOp) fairPut(key, token string, ticket int64, d time.Duration) {
	q := s.fairLive(key)
	e := memFairEntry{ticket, token, s.now.Add(d)}
	if i := slices.IndexFunc(q, func(x memFairEntry) bool { return x.token == token }); i >= 0 {
		q[i].expires = e.expires
		return
	}
	i, _ := slices.BinarySearchFunc(q, e, compareFairEntries)
	s.setFair(memKey(s.c.DB, key), slices.Insert(q, i, e))
}

// fairTake takes token out of key's queue and reports whether it was there.
func (s *memOp) fairTake(key, token string) bool {
	q := s.fairLive(key)
	n := len(q)
	q = slices.DeleteFunc(q, func(x memFairEntry) bool { return x.token == token })
	s.setFair(memKey(s.c.DB, key), q)
	return len(q) < n
}

// fairReserved reports whether key holds its queue's reservation.
func (s *memOp) fairReserved(key string) bool {
	e, ok := s.lookup(key)
	r, rok := s.lookup(fairResKey(key))
	return ok && rok && e.token == r.token
}

// fairFree reports whether key is absent or reserved for its queue.
func (s *memOp) fairFree(key string) bool {
	_, held := s.lookup(key)
	return !held || s.fairReserved(key)
}

// fairReserve reserves key for its queue until the queue's last entry
// expires, or drops a reservation of a queue that is gone.
func (s *memOp) fairReserve(key, tag string) {
	q := s.fairLive(key)
	if len(q) == 0 {
		if s.fairReserved(key) {
			s.del(key)
			s.del(fairResKey(key))
		}
		return
	}
	until := q[0].expires
	for _, e := range q {
		until = later(until, e.expires)
	}
	v := "redlockd:queued:" + tag
	s.store(key, v, until)
	s.store(fairResKey(key), v, until)
}

// fairTail is quorum.FairTail.
func (s *memOp) fairTail() quorum.Reply {
	q := s.fairLive(s.c.Key)
	if len(q) == 0 {
		return quorum.Reply{OK: true}
	}
	return quorum.Reply{OK: true, N: q[len(q)-1].ticket}
}

// fairAcquire is quorum.FairAcquire.
func (s *memOp) fairAcquire() quorum.Reply {
	key, token := s.c.Key, s.c.Token
	if s.c.N == 0 { // a try
		if _, held := s.lookup(key); held || s.fairQueued(key) {
			return quorum.Reply{}
		}
		s.put(key, token, s.c.TTL)
		return quorum.Reply{OK: true}
	}
	s.fairPut(key, token, s.c.N, max(s.c.Add, time.Millisecond))
	free := s.fairFree(key)
	if q := s.fairLive(key); free && len(q) > 0 && q[0].token == token {
		s.put(key, token, s.c.TTL)
		s.del(fairResKey(key))
		s.fairTake(key, token)
		return quorum.Reply{OK: true}
	}
	if free {
		s.fairReserve(key, strconv.FormatInt(s.c.N, 10))
	}
	if s.c.Add > 0 {
		s.mark(key, s.c.Add)
	}
	return quorum.Reply{}
}

// fairUndo is quorum.FairUndo.
func (s *memOp) fairUndo() quorum.Reply {
	if !s.holds(s.c.Key, s.c.Token) {
		return quorum.Reply{}
	}
	s.del(s.c.Key)
	s.fairPut(s.c.Key, s.c.Token, s.c.N, max(s.c.Add, time.Millisecond))
	s.fairReserve(s.c.Key, strconv.FormatInt(s.c.N, 10))
	return quorum.Reply{OK: true}
}

// fairLeave is quorum.FairLeave.
func (s *memOp) fairLeave() quorum.Reply {
	took := s.fairTake(s.c.Key, s.c.Token)
	// Whether or not the entry was still there (it expires as its wait
	// runs out, when the leave is sent), a free key is the next entry's.
	if s.fairFree(s.c.Key) {
		s.fairReserve(s.c.Key, s.c.Token)
		if s.fairQueued(s.c.Key) {
			s.announce = append(s.announce, memRelease{s.c.DB, s.c.Key})
		}
	}
	return quorum.Reply{OK: took}
}

// sweepFair drops the queues whose every entry has expired, as Redis
// expires a queue that no waiter refreshes: a key nobody touches again
// must not keep its queue.
func (m *Memory) sweepFair(now time.Time) {
	for k, q := range m.fair {
		if !slices.ContainsFunc(q, func(e memFairEntry) bool { return now.Before(e.expires) }) {
			delete(m.fair, k)
		}
	}
}
