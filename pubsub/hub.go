package pubsub

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/redlockd/redlockd/internal/glob"
	"github.com/redlockd/redlockd/quorum"
)

// Defaults of Options.
const (
	DefaultMinWindow = time.Second
	DefaultMaxSeen   = 100000
)

// Options tune a Hub. Zero values take the defaults noted.
type Options struct {
	// Window is how long a delivered message's copies from other nodes
	// are recognised as copies. Default: 20 of the cluster's node
	// timeouts, at least DefaultMinWindow.
	Window time.Duration
	// MaxSeen bounds how many delivered messages are remembered for that.
	// Default DefaultMaxSeen.
	MaxSeen int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Topic is a channel, or with Pattern set a glob-style pattern.
type Topic struct {
	Pattern bool
	Name    string
}

// Message is one delivery to a subscriber: Pattern is the subscribed
// pattern that matched Channel, "" for a channel subscription.
type Message struct {
	Channel, Pattern, Payload string
}

// Subscriber takes the messages of its topics. Deliver runs on the
// goroutine of the node that delivered the message, under the Hub's lock:
// it must not block nor call the Hub.
type Subscriber interface{ Deliver(Message) }

// Hub carries the clients' subscriptions over every node. It is safe for
// concurrent use.
type Hub struct {
	c     *quorum.Cluster
	nodes []quorum.Node
	opts  Options

	mu     sync.Mutex
	topics map[Topic]*topicSubs
	dedup  *dedup
}

// topicSubs are the subscribers of one topic; ready is closed once the
// nodes have answered its Subscribe.
type topicSubs struct {
	subs  map[Subscriber]struct{}
	ready chan struct{}
}

// New returns a Hub over c's nodes and starts hearing their messages.
// Its commands go to the nodes as c's broadcasts.
func New(c *quorum.Cluster, opts Options) *Hub {
	if opts.Window <= 0 {
		opts.Window = max(20*c.Config().NodeTimeout, DefaultMinWindow)
	}
	if opts.MaxSeen <= 0 {
		opts.MaxSeen = DefaultMaxSeen
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Hub{c: c, nodes: c.Nodes(), opts: opts, topics: make(map[Topic]*topicSubs)}
	h.dedup = newDedup(opts.Window, opts.MaxSeen, len(h.nodes))
	for i, n := range h.nodes {
		n.Watch(quorum.Watcher{Message: func(ch, pat, payload string) { h.received(i, ch, pat, payload) }})
	}
	return h
}

// Subscribe adds s to t's subscribers. The first subscriber of a topic
// subscribes every node to it and waits (within the node timeout) for
// their answers; later ones wait for that too. A node that is down is
// subscribed when it is back, so Subscribe never fails; it returns once
// a message published on a node that answered reaches s.
func (h *Hub) Subscribe(ctx context.Context, t Topic, s Subscriber) {
	h.mu.Lock()
	ts := h.topics[t]
	first := ts == nil
	if first {
		ts = &topicSubs{subs: make(map[Subscriber]struct{}), ready: make(chan struct{})}
		h.topics[t] = ts
	}
	ts.subs[s] = struct{}{}
	var wait func() []quorum.Reply
	if first {
		// Started under the lock, so that an Unsubscribe of the topic
		// reaches each node after it.
		wait = h.start(topicCmd(t, quorum.Subscribe))
	}
	h.mu.Unlock()
	if first {
		wait()
		close(ts.ready)
		return
	}
	select {
	case <-ts.ready:
	case <-ctx.Done():
	}
}

// Unsubscribe takes s off t's subscribers; the last one unsubscribes the
// nodes, without waiting for them (each node keeps its commands' order,
// so a Subscribe after it is not overtaken).
func (h *Hub) Unsubscribe(t Topic, s Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ts := h.topics[t]
	if ts == nil {
		return
	}
	if _, ok := ts.subs[s]; !ok {
		return
	}
	delete(ts.subs, s)
	if len(ts.subs) > 0 {
		return
	}
	delete(h.topics, t)
	h.c.Broadcast(quorum.OpPubSub, topicCmd(t, quorum.Unsubscribe), nil)
}

func topicCmd(t Topic, kind quorum.CmdKind) quorum.Cmd {
	cmd := quorum.Cmd{Kind: kind, Key: t.Name}
	if t.Pattern {
		cmd.N = 1
	}
	return cmd
}

// start broadcasts cmd; wait returns the nodes' answers in node order,
// each bounded by the node timeout. The nodes are asked before start
// returns, so start may run under h.mu to order the topic's commands.
func (h *Hub) start(cmd quorum.Cmd) (wait func() []quorum.Reply) {
	ch := make(chan []quorum.Reply, 1)
	h.c.Broadcast(quorum.OpPubSub, cmd, func(reps []quorum.Reply) { ch <- reps })
	return func() []quorum.Reply { return <-ch }
}

// Publish publishes payload on channel on every node. It returns the
// largest receiver count a node reported (each proxy subscribed to the
// channel counts once on a node, as does each client subscribed to the
// node directly), or a *quorum.NoQuorumError when no node took it.
func (h *Hub) Publish(ctx context.Context, channel, payload string) (int64, error) {
	reps := h.start(quorum.Cmd{Kind: quorum.Publish, Key: channel, Token: payload})()
	var most int64
	answered := 0
	var errs *multierror.Error
	for _, r := range reps {
		if r.Err != nil {
			errs = multierror.Append(errs, r.Err) // named by its node
			continue
		}
		answered++
		most = max(most, r.N)
	}
	if answered == 0 {
		return 0, &quorum.NoQuorumError{Answered: 0, Total: len(h.nodes), Errs: errs}
	}
	return most, nil
}

// received takes node i's copy of a message, and delivers it unless
// another node's copy of it was delivered (see dedup).
func (h *Hub) received(i int, channel, pattern, payload string) {
	if strings.HasPrefix(channel, quorum.ReservedPrefix) {
		return // the proxy's own channels: never a client's message
	}
	t := Topic{Pattern: pattern != "", Name: channel}
	if t.Pattern {
		t.Name = pattern
	}
	k := keyOf(channel, pattern, payload)
	h.mu.Lock()
	defer h.mu.Unlock()
	ts := h.topics[t]
	if ts == nil || !h.dedup.first(k, i, h.opts.Now()) {
		return
	}
	// Delivered under the lock (Deliver does not block): the first copies
	// of two messages may come from two nodes' goroutines, and the one
	// found first must be queued first, or subscribers would get
	// messages out of their publishing order.
	m := Message{Channel: channel, Pattern: pattern, Payload: payload}
	for s := range ts.subs {
		s.Deliver(m)
	}
}

// NumSub is how many of this proxy's clients subscribe to channel.
func (h *Hub) NumSub(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ts := h.topics[Topic{Name: channel}]; ts != nil {
		return len(ts.subs)
	}
	return 0
}

// NumPat is how many patterns this proxy's clients subscribe to.
func (h *Hub) NumPat() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for t := range h.topics {
		if t.Pattern {
			n++
		}
	}
	return n
}

// Channels lists the channels this proxy's clients subscribe to that
// match pattern ("" matches all), sorted.
func (h *Hub) Channels(pattern string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for t := range h.topics {
		if !t.Pattern && (pattern == "" || glob.Match(pattern, t.Name)) {
			out = append(out, t.Name)
		}
	}
	sort.Strings(out)
	return out
}
