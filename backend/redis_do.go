package backend

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

var _ quorum.Node = (*Redis)(nil)

// Do implements quorum.Node: every Cmd is one command or one script, sent
// through the multiplexer on the line of its key (a multi-key Cmd: its
// first key), so commands on one key keep their order on the wire. The
// reply is read by the line's reader; a deadline that passes first is the
// line's sweeper's to report. No goroutine, context or timer is made per
// call.
func (r *Redis) Do(deadline time.Time, cmd quorum.Cmd, rcv quorum.Receiver) {
	c := &call{r: r, rcv: rcv, deadline: deadline, kind: cmd.Kind, line: lineKey(&cmd)}
	if err := c.build(&cmd, r.watch.channel); err != nil {
		rcv.Receive(quorum.Reply{Err: fmt.Errorf("backend: %s: %w", c.op(), err)})
		return
	}
	r.mux.submit(&c.req, deadline, c.line, c, c.argv)
}

// lineKey is the key whose line carries cmd.
func lineKey(cmd *quorum.Cmd) string {
	if cmd.Key == "" && len(cmd.Keys) > 0 {
		return cmd.Keys[0]
	}
	return cmd.Key
}

// call is one Cmd on its way: the request it travels in and what its
// answer needs to read the reply, in one allocation.
type call struct {
	req      request
	r        *Redis
	rcv      quorum.Receiver
	kind     quorum.CmdKind
	deadline time.Time
	line     string
	s        *script // nil for a plain command
	evaled   bool    // sent again as EVAL after NOSCRIPT
	read     readFn
	nkeys    int      // ReleaseEach: how many answers to expect
	argv     []string // the command as sent
	args     [12]string
	err      error // the first bad argument
}

// readFn turns a reply (never an error reply) into the Cmd's Reply.
type readFn func(c *call, rep reply) (quorum.Reply, error)

// answer implements answerer.
func (c *call) answer(rep reply, err error) {
	if err == nil {
		err = rep.err()
	}
	if err != nil && c.s != nil && !c.evaled && errors.Is(err, errNoScript) {
		// The server lost its scripts (a restart, SCRIPT FLUSH): send the
		// text, which also caches it, under the same deadline.
		c.evaled = true
		c.argv[0], c.argv[1] = "eval", c.s.src
		c.r.mux.submit(new(request), c.deadline, c.line, c, c.argv)
		return
	}
	var out quorum.Reply
	if err == nil {
		out, err = c.read(c, rep)
	}
	if err != nil {
		out = quorum.Reply{Err: fmt.Errorf("backend: %s: %w", c.op(), err)}
	}
	c.rcv.Receive(out)
}

// command makes the call a plain command.
func (c *call) command(read readFn, args ...string) {
	c.read, c.argv = read, append(c.args[:0], args...)
}

// script makes the call an EVALSHA of s over keys and then args.
func (c *call) script(s *script, read readFn, keys []string, args ...string) {
	c.s, c.read = s, read
	c.argv = append(c.args[:0], "evalsha", s.sha, strconv.Itoa(len(keys)))
	c.argv = append(c.argv, keys...)
	c.argv = append(c.argv, args...)
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

var (
	errNoKeys      = errors.New("no keys")
	errUnknownKind = errors.New("unknown command kind")
)

// opNames name each kind in errors.
var opNames = [...]string{
	quorum.SetNX: "SET NX", quorum.Set: "SET", quorum.CompareAndDelete: "compare-and-delete",
	quorum.CompareAndExtend: "compare-and-extend", quorum.Get: "GET", quorum.Delete: "DEL",
	quorum.Expire: "PEXPIRE", quorum.AddTTL: "compare-and-add-ttl", quorum.ExtendOrSetNX: "extend-or-set",
	quorum.SetNXAll: "multi-key SET NX", quorum.ExtendAll: "multi-key extend", quorum.ReleaseEach: "multi-key release",
	quorum.HoldOwner: "hold", quorum.UndoHold: "undo hold", quorum.Unhold: "unhold",
	quorum.ExtendHeld: "extend-held", quorum.RestoreHeld: "restore-held",
	quorum.ReadFence: "read fence", quorum.RaiseFence: "raise fence",
}

func (c *call) op() string {
	if int(c.kind) < len(opNames) && opNames[c.kind] != "" {
		return opNames[c.kind]
	}
	return "command " + strconv.Itoa(int(c.kind))
}
