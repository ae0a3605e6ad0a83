package backend

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
)

// The lock commands go straight into the multiplexer's queue; their
// replies are read by the reader that receives them, through answerers
// that need no allocation beyond the request's own (SET NX) or one
// (a script, which must be able to send itself again).
var _ quorum.AsyncNode = (*Redis)(nil)

// SetNXAsync implements quorum.AsyncNode.
func (r *Redis) SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	px, err := ms(ttl)
	if err != nil {
		done(false, err)
		return
	}
	r.mux.submit(deadline, key, setNXAnswer(done), "set", key, token, "nx", "px", px)
}

// setNXAnswer reads SET NX's reply: OK when stored, null when the key is
// held (by any token).
type setNXAnswer func(bool, error)

func (done setNXAnswer) answer(rep reply, err error) {
	if err == nil {
		err = rep.err()
	}
	if err != nil {
		done(false, fmt.Errorf("backend: SET NX: %w", err))
		return
	}
	done(!rep.null, nil)
}

// CompareAndDeleteAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndDeleteAsync(deadline time.Time, key, token string, notify bool, done func(bool, error)) {
	c := &scriptCall{r: r, s: compareAndDeleteScript, op: "compare-and-delete", deadline: deadline, key: key, done: done}
	c.args[0], c.nargs = token, 1
	if notify {
		c.s, c.key2, c.args[1], c.nargs = compareAndDeleteNotifyScript, waitKey(key), r.watch.channel, 2
	}
	c.send()
}

// SetNXMarkedAsync implements quorum.AsyncWaitMarker.
func (r *Redis) SetNXMarkedAsync(deadline time.Time, key, token string, ttl, mark time.Duration, done func(bool, error)) {
	px, err := ms(ttl)
	if err == nil {
		var markPX string
		if markPX, err = ms(mark); err == nil {
			c := &scriptCall{r: r, s: setNXMarkedScript, op: "marked SET NX", deadline: deadline, key: key, key2: waitKey(key), done: done}
			c.args[0], c.args[1], c.args[2], c.nargs = token, px, markPX, 3
			c.send()
			return
		}
	}
	done(false, err)
}

// CompareAndExtendAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	px, err := ms(ttl)
	if err != nil {
		done(false, err)
		return
	}
	c := &scriptCall{r: r, s: compareAndExtendScript, op: "compare-and-extend", deadline: deadline, key: key, done: done}
	c.args[0], c.args[1], c.nargs = token, px, 2
	c.send()
}

// GetAsync implements quorum.AsyncNode.
func (r *Redis) GetAsync(deadline time.Time, key string, done func(string, time.Duration, bool, error)) {
	c := &scriptCall{r: r, s: getScript, deadline: deadline, key: key, read: func(rep reply, err error) {
		switch {
		case err != nil:
			done("", 0, false, fmt.Errorf("backend: GET: %w", err))
		case rep.null:
			done("", 0, false, nil)
		default:
			done(parseGet(rep))
		}
	}}
	c.send()
}

// scriptCall is one script run through submit, as evalsha runs it for the
// blocking methods: EVALSHA, and on a NOSCRIPT reply the script's text
// with EVAL, under the same deadline. An integer reply above 0 is a yes
// for done; read, when set, takes the reply (or error) instead.
type scriptCall struct {
	r        *Redis
	s        *redis.Script
	op       string // names the command in errors
	deadline time.Time
	key      string
	key2     string // a second key, when the script takes two
	args     [3]string
	nargs    int
	eval     bool
	done     func(bool, error)
	read     func(reply, error)
}

func (c *scriptCall) send() {
	var buf [8]string
	full := append(buf[:0], "evalsha", c.s.Hash(), "1", c.key)
	if c.key2 != "" {
		full[2], full = "2", append(full, c.key2)
	}
	if c.eval {
		full[0], full[1] = "eval", scriptBody(c.s)
	}
	full = append(full, c.args[:c.nargs]...)
	c.r.mux.submit(c.deadline, c.key, c, full...)
}

func (c *scriptCall) answer(rep reply, err error) {
	if err == nil {
		err = rep.err()
	}
	if err != nil && !c.eval && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		c.eval = true
		c.send()
		return
	}
	if c.read != nil {
		c.read(rep, err)
		return
	}
	n, err := intOf(rep, err)
	if err != nil {
		c.done(false, fmt.Errorf("backend: %s: %w", c.op, err))
		return
	}
	c.done(n > 0, nil)
}
