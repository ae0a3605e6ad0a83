package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend/wire"
)

// RedisOptions tunes a Redis node. The zero value is ready to use.
type RedisOptions struct {
	// Name overrides the node's name. Default: host:port, with "/db"
	// appended when db != 0; never the credentials.
	Name string
	// TLSConfig is used for rediss:// addresses (custom CA, client
	// certificates, InsecureSkipVerify); its ServerName defaults to the
	// URL's host. The scheme alone decides whether TLS is on: TLSConfig is
	// ignored for host:port and redis:// addresses. Default: system roots.
	TLSConfig *tls.Config
	// DialTimeout bounds each dial of a connection, handshake included
	// (the multiplexer's reconnects, the health and release connections).
	// Default: 1s.
	DialTimeout time.Duration
	// Conns is the number of connections that the node's commands share,
	// pipelining whatever callers send at the same time. Default: 1.
	Conns int
	// NodeTimeout is the budget each command gets (the quorum's per-node
	// timeout). A written command left unanswered that long again past
	// its deadline, and at least 250ms, marks its connection as stalled.
	// Default: the time left to its deadline when it is written.
	NodeTimeout time.Duration
	// HealthInterval is how often a node watched by a quorum.Cluster looks
	// at its server's run_id and role (it also looks on every new
	// connection). Default: 1s.
	HealthInterval time.Duration
}

// Redis is a quorum.Node backed by one redis-server (an independent
// master). Every command travels the multiplexer; INFO and the release
// subscription have a connection each, opened the same way.
type Redis struct {
	name string
	mux  *wire.Mux // database 0's; see dbLines for the others
	dbs  dbLines
	// watch runs the release subscription and the server checks, and owns
	// the health connection.
	watch *redisWatch
}

// NewRedis connects lazily to addr, which is host:port,
// redis://[user:pass@]host:port[/db] or rediss://… (TLS). It checks the
// address but does not dial: a backend that is down at start-up is a node
// that votes "no" until it comes back.
func NewRedis(addr string, opts RedisOptions) (*Redis, error) {
	o, err := parseAddr(addr, opts.TLSConfig)
	if err != nil {
		return nil, err
	}
	return newRedisFrom(o, opts), nil
}

// newRedisFrom makes the node of parsed options.
func newRedisFrom(o *redis.Options, opts RedisOptions) *Redis {
	name := opts.Name
	if name == "" {
		name = nodeName(o)
	}
	w := newRedisWatch(name, o.DB, opts.HealthInterval)
	cfg := nodeConfig(o, opts, w.onConnect)
	w.health.cfg, w.subCfg = cfg, cfg
	r := &Redis{name: name, mux: wire.NewMux(*cfg), watch: w}
	r.dbs.base = *cfg
	return r
}

func parseAddr(addr string, tlsConf *tls.Config) (*redis.Options, error) {
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("backend: bad address %q: %w", addr, err)
		}
		return &redis.Options{Addr: addr}, nil
	}
	o, err := redis.ParseURL(addr)
	if err != nil {
		// ParseURL's errors may quote the URL, password included.
		return nil, fmt.Errorf("backend: bad backend URL (scheme %q): %w", scheme(addr), redactErr(err, addr))
	}
	if o.Network != "tcp" {
		return nil, fmt.Errorf("backend: bad backend URL (scheme %q): only redis:// and rediss:// are supported", scheme(addr))
	}
	if o.TLSConfig != nil && tlsConf != nil {
		c := tlsConf.Clone()
		if c.ServerName == "" {
			c.ServerName = o.TLSConfig.ServerName
		}
		o.TLSConfig = c
	}
	return o, nil
}

func scheme(addr string) string {
	s, _, _ := strings.Cut(addr, "://")
	return s
}

// redactErr drops err's text if it repeats the address, which may carry a
// password.
func redactErr(err error, addr string) error {
	if strings.Contains(err.Error(), addr) {
		return errors.New("invalid URL")
	}
	return err
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func nodeName(o *redis.Options) string {
	if o.DB != 0 {
		return o.Addr + "/" + strconv.Itoa(o.DB)
	}
	return o.Addr
}

// Name implements quorum.Node.
func (r *Redis) Name() string { return r.name }

// Close stops the watch and closes every connection. Safe to call twice.
func (r *Redis) Close() error {
	r.watch.stop()
	r.dbs.close()
	r.mux.Close()
	return nil
}

// Hold holds back the writes of database 0's connections until Release
// (quorum.WriteHolder): the commands of rounds started meanwhile leave in one
// write per connection. Other databases' lines write as they always do.
func (r *Redis) Hold() { r.mux.Hold() }

// Release writes what was queued while held.
func (r *Redis) Release() { r.mux.Release() }

// ceilMillis converts a ttl to whole milliseconds, rounding up: a backend key
// that outlives the lock's validity by under a millisecond is safe, one
// that expires before it is not (and PX 0 is an error).
func ceilMillis(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, ErrInvalidTTL
	}
	return int64((ttl + time.Millisecond - 1) / time.Millisecond), nil
}

// wrap names the failed command. When the caller's ctx is done, the
// socket reports a timeout; the ctx error is wrapped as well so that
// errors.Is(err, context.DeadlineExceeded) holds.
func wrap(ctx context.Context, op string, err error) error {
	if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("backend: %s: %w (%w)", op, err, cerr)
	}
	return fmt.Errorf("backend: %s: %w", op, err)
}

// ctxErr is ctx.Err, except that a deadline already past counts even if
// ctx's own timer has not fired yet: the socket deadline set from it can
// expire first.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// infoField finds "name:value" among INFO's CRLF-separated lines.
func infoField(text, name string) (string, bool) {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}
