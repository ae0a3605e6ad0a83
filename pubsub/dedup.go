package pubsub

import (
	"crypto/sha256"
	"time"
)

// dedupKey names a message as its copies share it: the pattern that
// matched it ("" for a channel subscription), its channel and payload,
// hashed so that the state's size does not depend on the payloads.
type dedupKey [sha256.Size]byte

func keyOf(channel, pattern, payload string) dedupKey {
	h := sha256.New()
	h.Write([]byte(pattern))
	h.Write([]byte{0})
	h.Write([]byte(channel))
	h.Write([]byte{0})
	h.Write([]byte(payload))
	var k dedupKey
	h.Sum(k[:0])
	return k
}

// seen is one delivered message: the nodes whose copy of it arrived.
type seen struct {
	key   dedupKey
	at    time.Time
	nodes []bool
}

// dedup remembers the messages delivered within the window. A copy from
// node i is the message of the oldest remembered one with that key that
// has no copy from i yet; otherwise it is a new message. So the same
// payload published twice is delivered twice (each node delivers two
// copies), and a copy that comes later than the window is delivered again.
type dedup struct {
	window time.Duration
	limit  int // remembered messages at most
	nnodes int
	byKey  map[dedupKey][]*seen
	order  []*seen // oldest first, for expiry
}

func newDedup(window time.Duration, limit, nnodes int) *dedup {
	return &dedup{window: window, limit: limit, nnodes: nnodes, byKey: make(map[dedupKey][]*seen)}
}

// first reports whether node i's copy of key, arriving at now, is a new
// message (to deliver) rather than another node's copy of one delivered.
func (d *dedup) first(key dedupKey, i int, now time.Time) bool {
	d.expire(now)
	for _, s := range d.byKey[key] {
		if !s.nodes[i] {
			s.nodes[i] = true
			return false
		}
	}
	if d.nnodes == 1 {
		return true // nothing to tell apart
	}
	s := &seen{key: key, at: now, nodes: make([]bool, d.nnodes)}
	s.nodes[i] = true
	d.byKey[key] = append(d.byKey[key], s)
	d.order = append(d.order, s)
	return true
}

// expire forgets the messages older than the window, and the oldest ones
// past the limit: memory stays bounded, at the cost of delivering a late
// copy again.
func (d *dedup) expire(now time.Time) {
	n := 0
	for n < len(d.order) && (now.Sub(d.order[n].at) > d.window || len(d.order)-n >= d.limit) {
		d.forget(d.order[n])
		d.order[n] = nil
		n++
	}
	if n > 0 {
		d.order = d.order[n:]
	}
}

func (d *dedup) forget(s *seen) {
	list := d.byKey[s.key]
	for j, x := range list {
		if x == s {
			list = append(list[:j], list[j+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(d.byKey, s.key)
	} else {
		d.byKey[s.key] = list
	}
}
