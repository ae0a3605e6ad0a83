package commands

import (
	"errors"
	"strings"

	"github.com/redlockd/redlockd/pubsub"
	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(
		&command{name: "subscribe", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdSubscribe},
		&command{name: "psubscribe", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdPSubscribe},
		&command{name: "unsubscribe", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdUnsubscribe},
		&command{name: "punsubscribe", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdPUnsubscribe},
		&command{name: "publish", arity: 3, write: true, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdPublish},
		&command{name: "pubsub", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdPubSub},
	)
}

// msgReservedChannel is the refusal of a channel in the reserved
// namespace.
const msgReservedChannel = "ERR channel is in redlockd's reserved namespace"

// subscribedOnly are the commands a RESP2 connection with subscriptions
// may run, as in Redis 7.
var subscribedOnly = map[string]bool{
	"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true,
	"ping": true, "quit": true, "reset": true,
}

// subscribedRefusal is the error of a command that a RESP2 connection in
// subscribed mode may not run, "" when it may. RESP3 connections run
// anything: their messages are pushes, apart from the replies.
func subscribedRefusal(s *Session, cmd *command, args [][]byte) string {
	if subscribedOnly[cmd.name] || !s.subscribedRESP2() {
		return ""
	}
	name := cmd.name
	if hasSubcommands[name] && len(args) > 1 {
		name += "|" + strings.ToLower(string(args[1]))
	}
	return "ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// hasSubcommands are the commands Redis names with their subcommand
// ("pubsub|numsub") in errors.
var hasSubcommands = map[string]bool{
	"pubsub": true, "client": true, "config": true, "command": true, "script": true,
}

// sessionSubs are a connection's subscriptions, in the order it made
// them (UNSUBSCRIBE without arguments answers in that order).
type sessionSubs struct {
	channels []string
	patterns []string
	// deliver writes a message to the connection out of band: an array
	// of bulk strings (a push in RESP3); nil until the proxy sets it.
	deliver func(live func() bool, args ...string)
}

func (ss *sessionSubs) list(pattern bool) *[]string {
	if pattern {
		return &ss.patterns
	}
	return &ss.channels
}

// SetDeliver gives the session a way to send its client the messages of
// its subscriptions, between replies: deliver writes an array of bulk
// strings (a ">" push on a RESP3 connection) if live still reports true
// when its turn comes (the session may have unsubscribed meanwhile). It
// must be safe to call from any goroutine and must not block.
func (s *Session) SetDeliver(deliver func(live func() bool, args ...string)) {
	s.mu.Lock()
	s.subs.deliver = deliver
	s.mu.Unlock()
}

// Deliver implements pubsub.Subscriber.
func (s *Session) Deliver(m pubsub.Message) {
	s.mu.Lock()
	deliver := s.subs.deliver
	s.mu.Unlock()
	t := pubsub.Topic{Pattern: m.Pattern != "", Name: m.Channel}
	if t.Pattern {
		t.Name = m.Pattern
	}
	live := func() bool { return s.hasTopic(t) }
	switch {
	case deliver == nil || !live():
	case m.Pattern == "":
		deliver(live, "message", m.Channel, m.Payload)
	default:
		deliver(live, "pmessage", m.Pattern, m.Channel, m.Payload)
	}
}

func (s *Session) hasTopic(t pubsub.Topic) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range *s.subs.list(t.Pattern) {
		if n == t.Name {
			return true
		}
	}
	return false
}

// subscriptions is how many channels and patterns the session subscribes.
func (s *Session) subscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs.channels) + len(s.subs.patterns)
}

func (s *Session) subscribedRESP2() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto.Load() != 3 && len(s.subs.channels)+len(s.subs.patterns) > 0
}

// addTopic records a subscription; false if the session had it.
func (s *Session) addTopic(t pubsub.Topic) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.subs.list(t.Pattern)
	for _, n := range *l {
		if n == t.Name {
			return false
		}
	}
	*l = append(*l, t.Name)
	return true
}

// dropTopic forgets a subscription; false if the session did not have it.
func (s *Session) dropTopic(t pubsub.Topic) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.subs.list(t.Pattern)
	for i, n := range *l {
		if n == t.Name {
			*l = append((*l)[:i:i], (*l)[i+1:]...)
			return true
		}
	}
	return false
}

func (s *Session) topics(pattern bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), *s.subs.list(pattern)...)
}

func reservedTopics(args [][]byte) bool {
	for _, a := range args {
		if strings.HasPrefix(string(a), quorum.ReservedPrefix) {
			return true
		}
	}
	return false
}

func (h *Handler) cmdSubscribe(c *call)  { h.subscribe(c, false) }
func (h *Handler) cmdPSubscribe(c *call) { h.subscribe(c, true) }

// subscribe subscribes the session to each argument, answering each as
// Redis does. A pattern may match reserved channels: their messages are
// never delivered. A name that starts in the reserved namespace refuses
// the whole command.
func (h *Handler) subscribe(c *call, pattern bool) {
	if reservedTopics(c.args) {
		c.w.WriteError(msgReservedChannel)
		return
	}
	verb := "subscribe"
	if pattern {
		verb = "psubscribe"
	}
	for _, a := range c.args {
		t := pubsub.Topic{Pattern: pattern, Name: string(a)}
		if c.s.addTopic(t) {
			h.hub.Subscribe(c.s.Context(), t, c.s)
		}
		writeSubReply(c.w, verb, t.Name, true, c.s.subscriptions())
	}
}

// writeSubReply writes one confirmation: [verb, name, count], a push in
// RESP3; a nil name (hasName false) when nothing was subscribed.
func writeSubReply(w Writer, verb, name string, hasName bool, count int) {
	w.WritePush(3)
	w.WriteBulkString(verb)
	if hasName {
		w.WriteBulkString(name)
	} else {
		w.WriteNull()
	}
	w.WriteInt(int64(count))
}

func (h *Handler) cmdUnsubscribe(c *call)  { h.unsubscribe(c, false) }
func (h *Handler) cmdPUnsubscribe(c *call) { h.unsubscribe(c, true) }

// unsubscribe drops the named subscriptions, or all of the kind without
// arguments (one confirmation with a nil name when there are none).
func (h *Handler) unsubscribe(c *call, pattern bool) {
	if reservedTopics(c.args) {
		c.w.WriteError(msgReservedChannel)
		return
	}
	verb := "unsubscribe"
	if pattern {
		verb = "punsubscribe"
	}
	names := make([]string, len(c.args))
	for i := range c.args {
		names[i] = c.arg(i)
	}
	if len(names) == 0 {
		names = c.s.topics(pattern)
		if len(names) == 0 {
			writeSubReply(c.w, verb, "", false, c.s.subscriptions())
			return
		}
	}
	for _, n := range names {
		t := pubsub.Topic{Pattern: pattern, Name: n}
		if c.s.dropTopic(t) {
			h.hub.Unsubscribe(t, c.s)
		}
		writeSubReply(c.w, verb, n, true, c.s.subscriptions())
	}
}

// unsubscribeAll drops every subscription of the session (RESET, a
// closed connection).
func (h *Handler) unsubscribeAll(s *Session) {
	for _, pattern := range []bool{false, true} {
		for _, n := range s.topics(pattern) {
			t := pubsub.Topic{Pattern: pattern, Name: n}
			if s.dropTopic(t) {
				h.hub.Unsubscribe(t, s)
			}
		}
	}
}

// cmdPublish publishes on every backend: each delivers its copy, and the
// subscribers get the message once (see package pubsub). The reply is the
// largest receiver count a backend reported.
func (h *Handler) cmdPublish(c *call) {
	if reservedTopics(c.args[:1]) {
		c.w.WriteError(msgReservedChannel)
		return
	}
	n, err := h.hub.Publish(c.s.Context(), c.arg(0), c.arg(1))
	if nq, ok := errors.AsType[*quorum.NoQuorumError](err); ok {
		c.w.WriteError(errNoQuorum(nq))
		return
	}
	c.w.WriteInt(n)
}

// cmdPubSub answers PUBSUB CHANNELS|NUMSUB|NUMPAT from this proxy's own
// subscriptions: clients of other proxies, or of the backends directly,
// are not counted.
func (h *Handler) cmdPubSub(c *call) {
	sub := strings.ToLower(c.arg(0))
	switch {
	case sub == "channels" && len(c.args) <= 2:
		pattern := ""
		if len(c.args) == 2 {
			pattern = c.arg(1)
		}
		chans := h.hub.Channels(pattern)
		c.w.WriteArray(len(chans))
		for _, ch := range chans {
			c.w.WriteBulkString(ch)
		}
	case sub == "numsub":
		c.w.WriteArray(2 * (len(c.args) - 1))
		for _, ch := range c.args[1:] {
			c.w.WriteBulk(ch)
			c.w.WriteInt(int64(h.hub.NumSub(string(ch))))
		}
	case sub == "numpat" && len(c.args) == 1:
		c.w.WriteInt(int64(h.hub.NumPat()))
	case sub == "numpat":
		c.w.WriteError(errArity("pubsub|numpat"))
	case sub == "channels":
		c.w.WriteError("ERR unknown subcommand or wrong number of arguments for '" + c.arg(0) + "'. Try PUBSUB HELP.")
	default:
		c.w.WriteError(errUnknownSub(c.arg(0), "PUBSUB"))
	}
}

// firstArg is args[0], or nothing.
func firstArg(args [][]byte) []byte {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}
