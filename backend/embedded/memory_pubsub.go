package embedded

import (
	"slices"
	"sync"

	"github.com/redlockd/redlockd/internal/glob"
	"github.com/redlockd/redlockd/quorum"
)

// memPubSub is the in-memory node's pub/sub: a Publish reaches the
// subscribed channels and patterns of every Cluster over the node, as a
// Redis server's PUBLISH reaches every proxy subscribed to it.
type memPubSub struct {
	mu      sync.Mutex
	counts  map[subTopic]int
	message watchers[func(channel, pattern, payload string)]
}

// subTopic is a channel or a pattern the node is subscribed to.
type subTopic struct {
	pattern bool
	name    string
}

// memMessage is one delivery of a Publish, made once the node's lock is
// let go so that a watcher may call back into the node.
type memMessage struct{ channel, pattern, payload string }

func (p *memPubSub) change(t subTopic, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = make(map[subTopic]int)
	}
	switch n := p.counts[t]; {
	case on:
		p.counts[t] = n + 1
	case n > 1:
		p.counts[t] = n - 1
	default:
		delete(p.counts, t)
	}
}

// matches lists the deliveries of a message on channel, the channel's
// first and then the patterns' (sorted), as Redis sends "message" before
// "pmessage"; it counts its receivers as the server counts subscribed
// connections.
func (p *memPubSub) matches(channel, payload string) ([]memMessage, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []memMessage
	n := int64(p.counts[subTopic{name: channel}])
	if n > 0 {
		out = append(out, memMessage{channel, "", payload})
	}
	var pats []string
	for t, c := range p.counts {
		if t.pattern && glob.Match(t.name, channel) {
			pats = append(pats, t.name)
			n += int64(c)
		}
	}
	slices.Sort(pats)
	for _, pat := range pats {
		out = append(out, memMessage{channel, pat, payload})
	}
	return out, n
}

func (p *memPubSub) deliver(msgs []memMessage) {
	if len(msgs) == 0 {
		return
	}
	fns := p.message.list()
	for _, m := range msgs {
		for _, fn := range fns {
			fn(m.channel, m.pattern, m.payload)
		}
	}
}

// subscription is Subscribe and Unsubscribe.
func (s *memOp) subscription() quorum.Reply {
	s.m.pubsub.change(subTopic{pattern: s.c.N == 1, name: s.c.Key}, s.c.Kind == quorum.Subscribe)
	return quorum.Reply{OK: true}
}

func (s *memOp) publish() quorum.Reply {
	msgs, n := s.m.pubsub.matches(s.c.Key, s.c.Token)
	s.published = append(s.published, msgs...)
	return quorum.Reply{OK: true, N: n}
}
