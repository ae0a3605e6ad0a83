package backend

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultConns is how many multiplexed connections a node opens. Redis runs
// commands on one thread, so more connections buy no parallelism there; a
// second one keeps a large reply or a reset from stalling every caller.
const defaultConns = 2

// newNodeMux builds the multiplexer for the node's hot-path commands from
// the same options go-redis uses, so both paths reach the same server, db
// and credentials.
func newNodeMux(o *redis.Options, conns int, connected func(context.Context, net.Conn) error) *mux {
	cfg := muxConfig{conns: orDefault(conns, defaultConns), timeout: o.DialTimeout, connected: connected}
	addr, tlsConf := o.Addr, o.TLSConfig
	cfg.dial = func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || tlsConf == nil {
			return nc, err
		}
		tc := tls.Client(nc, tlsConf.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
	switch {
	case o.Username != "":
		cfg.handshake = append(cfg.handshake, []string{"auth", o.Username, o.Password})
	case o.Password != "":
		cfg.handshake = append(cfg.handshake, []string{"auth", o.Password})
	}
	if o.DB != 0 {
		cfg.handshake = append(cfg.handshake, []string{"select", strconv.Itoa(o.DB)})
	}
	return newMux(cfg)
}

// do runs one command through the multiplexer; an error reply becomes the
// error.
func (r *Redis) do(ctx context.Context, key string, args ...string) (reply, error) {
	rep, err := r.mux.do(ctx, key, args...)
	if err != nil {
		return reply{}, err
	}
	return rep, rep.err()
}

// evalsha runs a script by its SHA1 and loads it with EVAL when the server
// does not know it (after a restart or SCRIPT FLUSH).
func (r *Redis) evalsha(ctx context.Context, s *redis.Script, key string, args ...string) (reply, error) {
	return r.evalshaKeys(ctx, s, []string{key}, args...)
}

// evalsha2 is evalsha for a script of two keys.
func (r *Redis) evalsha2(ctx context.Context, s *redis.Script, key, key2 string, args ...string) (reply, error) {
	return r.evalshaKeys(ctx, s, []string{key, key2}, args...)
}

// evalshaKeys is evalsha for a script of any number of keys; the first
// picks the connection.
func (r *Redis) evalshaKeys(ctx context.Context, s *redis.Script, keys []string, args ...string) (reply, error) {
	full := make([]string, 0, 3+len(keys)+len(args))
	full = append(full, "evalsha", s.Hash(), strconv.Itoa(len(keys)))
	full = append(full, keys...)
	full = append(full, args...)
	key := keys[0]
	rep, err := r.do(ctx, key, full...)
	if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return rep, err
	}
	full[0], full[1] = "eval", scriptBody(s)
	return r.do(ctx, key, full...)
}

// scriptBodies maps the node's scripts to their text: redis.Script keeps
// its source private.
var scriptBodies = map[*redis.Script]string{}

func scriptBody(s *redis.Script) string { return scriptBodies[s] }

func newScript(src string) *redis.Script {
	s := redis.NewScript(src)
	scriptBodies[s] = src
	return s
}

func ms(ttl time.Duration) (string, error) {
	n, err := ceilMillis(ttl)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10), nil
}

// intOf reads an integer reply.
func intOf(rep reply, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if rep.kind != ':' {
		return 0, unexpected(rep)
	}
	return rep.num, nil
}

func unexpected(rep reply) error {
	return fmt.Errorf("backend: unexpected reply type %q", rep.kind)
}
