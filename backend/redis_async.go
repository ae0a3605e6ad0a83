package backend

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
)

// The lock commands go straight into the multiplexer's queue; their
// replies are handled by the reader that receives them.
var _ quorum.AsyncNode = (*Redis)(nil)

// SetNXAsync implements quorum.AsyncNode.
func (r *Redis) SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	px, err := ms(ttl)
	if err != nil {
		done(false, err)
		return
	}
	r.mux.submit(deadline, key, func(rep reply, err error) {
		if err == nil {
			err = rep.err()
		}
		if err != nil {
			done(false, fmt.Errorf("backend: SET NX: %w", err))
			return
		}
		done(!rep.null, nil) // null: held, by any token
	}, "set", key, token, "nx", "px", px)
}

// CompareAndDeleteAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndDeleteAsync(deadline time.Time, key, token string, notify bool, done func(bool, error)) {
	cb := func(rep reply, err error) {
		n, err := intOf(rep, err)
		if err != nil {
			done(false, fmt.Errorf("backend: compare-and-delete: %w", err))
			return
		}
		done(n > 0, nil)
	}
	if notify {
		r.evalshaAsync(deadline, compareAndDeleteNotifyScript, cb, key, token, r.watch.channel)
		return
	}
	r.evalshaAsync(deadline, compareAndDeleteScript, cb, key, token)
}

// CompareAndExtendAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	px, err := ms(ttl)
	if err != nil {
		done(false, err)
		return
	}
	r.evalshaAsync(deadline, compareAndExtendScript, func(rep reply, err error) {
		n, err := intOf(rep, err)
		if err != nil {
			done(false, fmt.Errorf("backend: compare-and-extend: %w", err))
			return
		}
		done(n > 0, nil)
	}, key, token, px)
}

// GetAsync implements quorum.AsyncNode.
func (r *Redis) GetAsync(deadline time.Time, key string, done func(string, time.Duration, bool, error)) {
	r.evalshaAsync(deadline, getScript, func(rep reply, err error) {
		switch {
		case err != nil:
			done("", 0, false, fmt.Errorf("backend: GET: %w", err))
		case rep.null:
			done("", 0, false, nil)
		default:
			done(parseGet(rep))
		}
	}, key)
}

// evalshaAsync is evalsha through submit: cb gets the reply, or the error
// (a server's error reply included). A NOSCRIPT reply sends the script's
// text with EVAL, under the same deadline.
func (r *Redis) evalshaAsync(deadline time.Time, s *redis.Script, cb func(reply, error), key string, args ...string) {
	full := make([]string, 0, 4+len(args))
	full = append(full, "evalsha", s.Hash(), "1", key)
	full = append(full, args...)
	r.mux.submit(deadline, key, func(rep reply, err error) {
		if err == nil {
			err = rep.err()
		}
		if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			cb(rep, err)
			return
		}
		full[0], full[1] = "eval", scriptBody(s)
		r.mux.submit(deadline, key, func(rep reply, err error) {
			if err == nil {
				err = rep.err()
			}
			cb(rep, err)
		}, full...)
	}, full...)
}
