package backend

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/quorum"
)

var _ quorum.Node = (*Redis)(nil)
var _ quorum.ReplyError = ServerError{}

var (
	// ErrClosed is returned by a node's operations after Close (for a Redis
	// node, by the quorum.Node methods, which run over its multiplexer:
	// the multiplexer's own error).
	ErrClosed = wire.ErrClosed
	// ErrInvalidTTL is returned for a ttl <= 0: the quorum's own error, so
	// that one fact has one name. The quorum never sends such a ttl, and
	// Redis would treat PEXPIRE with it as a delete, so it is refused
	// rather than passed on.
	ErrInvalidTTL = quorum.ErrInvalidTTL
)

// ServerError is an error reply of the server (-ERR …, -OOM …, -NOSCRIPT
// …): the server refused the command, as opposed to a network failure.
// Its ReplyCode makes it a quorum.ReplyError.
type ServerError = wire.ServerError

// errNoScript is the reply to EVALSHA of a script the server does not hold
// (after a restart or SCRIPT FLUSH).
// It is an error variable, boxed once: errors.Is takes an error.
var errNoScript error = ServerError{Code: "NOSCRIPT"}

// Do implements quorum.Node: every Cmd is one command or one script, sent
// through the multiplexer on the line of its key (a multi-key Cmd: its
// first key), so commands on one key keep their order on the wire. The
// reply is read by the line's reader; a deadline that passes first is the
// line's sweeper's to report. No goroutine, context or timer is made per
// call, and the call's record is reused (see call.Released).
func (r *Redis) Do(deadline time.Time, cmd quorum.Cmd, rcv quorum.Receiver) {
	r.do(deadline, cmd, rcv, false)
}

// do is Do; asking sends ASKING ahead of the command, in the same request
// (a Redis Cluster's importing master then serves the key after an ASK
// redirect).
func (r *Redis) do(deadline time.Time, cmd quorum.Cmd, rcv quorum.Receiver, asking bool) {
	switch cmd.Kind {
	case quorum.Subscribe, quorum.Unsubscribe:
		// Subscriptions live on the subscription connection, not on a line.
		r.watch.clients.change(deadline, cmd, cmd.Kind == quorum.Subscribe, rcv)
		return
	}
	c := callPool.Get().(*call)
	c.rcv, c.kind, c.asking = rcv, cmd.Kind, asking
	m, err := r.muxOf(&cmd)
	if err == nil {
		c.ln = m.Line(lineKey(&cmd))
		err = c.build(cmd, r.watch.channels[cmd.DB])
	}
	if err != nil {
		rcv.Receive(quorum.Reply{Err: fmt.Errorf("backend: %s: %w", c.op(), err)})
		return
	}
	c.send(&c.req, deadline)
}

// askingReq is ASKING, encoded; hello3Req and hello2Req switch the
// connection's protocol.
var (
	askingReq = resp.AppendCommand(nil, []string{"asking"})
	hello3Req = resp.AppendCommand(nil, []string{"hello", "3"})
	hello2Req = resp.AppendCommand(nil, []string{"hello", "2"})
)

// send submits r, one of c's requests, on c's line. A call that follows an
// ASK redirect puts ASKING in front of every request it sends, resends
// included: the importing master serves the slot's keys only to the
// command (or MULTI … EXEC) right after ASKING. ASKING's reply is skipped.
// A client's script wanted in RESP3 goes between HELLO 3 and HELLO 2 in
// the same request: Redis converts a script's reply to the protocol of
// the connection, and the connection is back to RESP2 before the next
// request on it. Both HELLO replies are dropped.
func (c *call) send(r *wire.Request, deadline time.Time) {
	if c.asking {
		r.Buf = append(append(make([]byte, 0, len(askingReq)+len(r.Buf)), askingReq...), r.Buf...)
		r.Skip++
	}
	if c.resp3 {
		buf := make([]byte, 0, len(hello3Req)+len(r.Buf)+len(hello2Req))
		r.Buf = append(append(append(buf, hello3Req...), r.Buf...), hello2Req...)
		r.Skip++
		r.After = 1
	}
	c.ln.Submit(r, deadline, c)
}

// sent is the command c sent first, without the ASKING and HELLOs around
// it.
func (c *call) sent() []byte {
	b := c.req.Buf
	if c.resp3 {
		b = b[len(hello3Req) : len(b)-len(hello2Req)]
	}
	if c.asking {
		b = b[len(askingReq):]
	}
	return b
}

// lineKey is the key whose line carries cmd.
func lineKey(cmd *quorum.Cmd) string {
	if cmd.Key == "" && len(cmd.Keys) > 0 {
		return cmd.Keys[0]
	}
	return cmd.Key
}

// call is one Cmd on its way: the request it travels in and what its
// answer needs to read the reply, in one record, taken from callPool per
// node per command: only what the hot path needs is kept here, packed.
type call struct {
	req    wire.Request // its deadline is the call's
	ln     *wire.Line   // the line of the Cmd's key, in the Cmd's database
	rcv    quorum.Receiver
	s      *Script // nil for a plain command
	marked *markedEval
	read   readFn
	err    error // the first bad argument
	kind   quorum.CmdKind
	evaled bool  // sent again as EVAL after NOSCRIPT
	asking bool  // follows an ASK redirect: each request begins with ASKING
	resp3  bool  // a client's script wanted in RESP3 (see send)
	nkeys  int32 // ReleaseEach, permits: how many answers to expect
}

// callPool holds the calls that their lines released (see Released).
var callPool = sync.Pool{New: func() any { return new(call) }}

// maxKeptBuf is the largest encoding buffer that a released call keeps
// for its next command (see room).
const maxKeptBuf = 1 << 10

// Released implements wire.Releaser: the line holds c.req no more, and
// c's answer has been given, so c goes back to callPool, cleared. Its
// command's buffer, where the command outgrew the request's Small, is
// kept for the next (see room): every buffer of c.req.Buf is the call's
// own, and the line copied it when it wrote it. A call that sent its
// script again after NOSCRIPT (resend) has a second request, which may
// still be in a line's hands: it is left to the collector, as is the
// resend's request itself. A call that never reached a line (its build
// failed) is too.
func (c *call) Released(r *wire.Request) {
	if r != &c.req || c.evaled {
		return
	}
	buf := c.req.Buf
	*c = call{}
	if cap(buf) > len(c.req.Small) && cap(buf) <= maxKeptBuf {
		c.req.Buf = buf[:0]
	}
	callPool.Put(c)
}

// room is where the call's command is encoded: its request's Small, or
// the larger buffer that an earlier command of the call grew, where it
// kept one (see Released).
func (c *call) room() []byte {
	if cap(c.req.Buf) > len(c.req.Small) {
		return c.req.Buf[:0]
	}
	return c.req.Small[:0]
}

// readFn turns a reply (never an error reply) into the Cmd's Reply.
type readFn func(c *call, rep wire.Reply) (quorum.Reply, error)

// Answer implements wire.Answerer.
func (c *call) Answer(rep wire.Reply, at time.Time, err error) {
	if err == nil {
		if err = rep.Err(); err != nil && c.scriptOwnError(err) {
			err = nil // a client's script answered with an error: its reply
		}
	}
	var out quorum.Reply
	if err == nil {
		out, err = c.read(c, rep)
	}
	if err != nil {
		// A reply about the key (WRONGTYPE) reads as the plain command
		// gives it, the same from every node, with Get's ttl kept.
		err = KeyError(c.kind, err)
	}
	// The server lost its scripts (a restart, SCRIPT FLUSH): send the
	// text, which also caches it, under the same deadline.
	if err != nil && errors.Is(err, errNoScript) && c.resend() {
		return
	}
	if err != nil {
		out = quorum.Reply{Err: fmt.Errorf("backend: %s: %w", c.op(), err), TTL: KeyErrorTTL(c.kind, err, out)}
	}
	out.At = at
	c.rcv.Receive(out)
}

// command makes the call a plain command, encoded into its request at
// once: the call keeps the bytes it sends, not its arguments.
func (c *call) command(read readFn, args ...string) {
	c.read = read
	c.req.Buf = resp.AppendCommand(c.room(), args)
}

// setNXPX makes the call SET key token NX PX ms, the most frequent
// command of all, encoded without building ms as a string.
func (c *call) setNXPX(key, token string, ttl time.Duration) {
	n, err := ceilMillis(ttl)
	if err != nil {
		c.err = err
		return
	}
	c.read = readStored
	var digits [20]byte
	ms := strconv.AppendInt(digits[:0], n, 10)
	b := append(c.room(), "*6\r\n$3\r\nset\r\n"...)
	b = appendBulk(appendBulk(b, key), token)
	b = append(b, "$2\r\nnx\r\n$2\r\npx\r\n"...)
	c.req.Buf = appendBulk(b, ms)
}

// script makes the call an EVALSHA of s over keys and then args, encoded
// into its request at once.
func (c *call) script(s *Script, read readFn, keys []string, args ...string) {
	c.s, c.read = s, read
	c.req.Buf = appendScript(c.room(), s, false, keys, args...)
}

// scriptTTL is script over keys and then args and ttl in whole
// milliseconds (rounded up), encoded without building the ttl as a
// string: an extend's, sent per node per renewal.
func (c *call) scriptTTL(s *Script, read readFn, keys []string, ttl time.Duration, args ...string) {
	n, err := ceilMillis(ttl)
	if err != nil {
		c.err = err
		return
	}
	c.s, c.read = s, read
	var digits [20]byte
	c.req.Buf = appendScriptTail(c.room(), s, false, keys, args, strconv.AppendInt(digits[:0], n, 10))
}

// evalPrefix is how an encoded EVALSHA begins after its array header: the
// name, then the SHA1 (40 hex digits) as a bulk string.
const evalPrefix = "$7\r\nevalsha\r\n$40\r\n"

// evalForm is the EVAL form of sent, an encoded EVALSHA of s: the same
// array with the script's text in place of the name and SHA1, so a
// NOSCRIPT resend needs no copy of the arguments.
func evalForm(sent []byte, s *Script) []byte {
	hdr := bytes.IndexByte(sent, '\n') + 1 // "*<n>\r\n"
	rest := sent[hdr+len(evalPrefix)+len(s.sha)+2:]
	out := make([]byte, 0, len(sent)+len(s.src)+16)
	out = append(append(out, sent[:hdr]...), "$4\r\neval\r\n"...)
	return append(appendBulk(out, s.src), rest...)
}

// ms is d in whole milliseconds, rounded up; a d that is not positive is
// recorded as the call's error.
func (c *call) ms(d time.Duration) string {
	n, err := ceilMillis(d)
	if err != nil {
		c.err = err
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// msOrZero is d in whole milliseconds, rounded up, with "0" for no
// duration (no wait mark, no limit).
func msOrZero(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	n, _ := ceilMillis(d)
	return strconv.FormatInt(n, 10)
}

var (
	errNoKeys      = errors.New("no keys")
	errUnknownKind = errors.New("unknown command kind")
	// ErrBadDB refuses a Cmd whose database is outside 0 to quorum.DBs-1.
	ErrBadDB = errors.New("database index out of range")
)
