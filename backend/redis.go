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
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The scripts run atomically on the server, so a compare and its write can
// never straddle another client's write. Their bodies are fixed: Redis
// caches scripts by the SHA1 of the exact text.
var (
	compareAndDeleteScript = newScript(
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)
	compareAndExtendScript = newScript(
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`)
	// getScript reads the value and its pttl in one round trip, both from
	// the same instant.
	getScript = newScript(
		`local v = redis.call("get",KEYS[1]) if not v then return false end return {v, redis.call("pttl",KEYS[1])}`)
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
	// PoolSize is the number of pooled connections. Default: 64.
	PoolSize int
	// MinIdleConns is how many connections are kept open while idle, so the
	// first lock after a quiet spell does not pay for a dial (a TLS
	// handshake can exceed the node timeout). Default: 2; negative: none.
	MinIdleConns int
	// DialTimeout bounds dials that run without a caller's deadline (the
	// idle-connection refill, the multiplexer's reconnects). Default: 1s.
	DialTimeout time.Duration
	// Conns is the number of connections that the lock commands (the
	// quorum.Node methods) share, pipelining whatever callers send at the
	// same time. Default: 2.
	Conns int
	// HealthInterval is how often a node watched by a quorum.Cluster looks
	// at its server's run_id and role (it also looks on every new
	// connection). Default: 1s.
	HealthInterval time.Duration
}

// Redis is a quorum.Node backed by one redis-server (an independent master).
type Redis struct {
	name   string
	client *redis.Client
	// mux carries the quorum.Node methods; client carries the rest.
	mux *mux
	// watch runs the release subscription and the server checks.
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
	applyOptions(o, opts)
	name := opts.Name
	if name == "" {
		name = nodeName(o)
	}
	w := newRedisWatch(name, o.DB, opts.HealthInterval)
	o.OnConnect = w.onClientConnect
	w.client = redis.NewClient(o)
	return &Redis{name: name, client: w.client, mux: newNodeMux(o, opts.Conns, w.onConnect), watch: w}, nil
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

// applyOptions fixes the client settings that the Redlock timing depends on.
func applyOptions(o *redis.Options, opts RedisOptions) {
	// The per-node timeout is the caller's ctx deadline; go-redis applies
	// it to the command's socket reads and writes only with this set.
	o.ContextTimeoutEnabled = true
	// No retries: Redlock's answer to a failing node is the other nodes. A
	// retry (with its backoff sleeps) spends the node's whole budget on a
	// second try, and a SET NX whose reply was lost would, retried, read its
	// own key as held. -1 means none (0 means the default of 3).
	o.MaxRetries = -1
	// RESP2 and no CLIENT SETINFO / maintenance-notification handshakes:
	// fewer round trips per new connection, and nothing that an older or
	// restricted server could answer with an error.
	o.Protocol = 2
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// Only single commands are sent; a separate pipeline pool is unneeded.
	o.PipelinePoolSize = -1
	o.PoolSize = orDefault(opts.PoolSize, 64)
	o.MinIdleConns = max(orDefault(opts.MinIdleConns, 2), 0)
	o.DialTimeout = orDefault(opts.DialTimeout, time.Second)
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

// Client returns the underlying go-redis client, for extensions that need
// commands the Node interface does not cover.
func (r *Redis) Client() *redis.Client { return r.client }

// SetNX implements quorum.Node with SET key token NX PX ms.
func (r *Redis) SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	px, err := ms(ttl)
	if err != nil {
		return false, err
	}
	rep, err := r.do(ctx, key, "set", key, token, "nx", "px", px)
	if err != nil {
		return false, wrap(ctx, "SET NX", err)
	}
	return !rep.null, nil // null: held, by any token
}

// Set implements quorum.Node with SET key token PX ms.
func (r *Redis) Set(ctx context.Context, key, token string, ttl time.Duration) error {
	px, err := ms(ttl)
	if err != nil {
		return err
	}
	if _, err := r.do(ctx, key, "set", key, token, "px", px); err != nil {
		return wrap(ctx, "SET", err)
	}
	return nil
}

// CompareAndDelete implements quorum.Node with a Lua compare-and-delete.
func (r *Redis) CompareAndDelete(ctx context.Context, key, token string) (bool, error) {
	rep, err := r.evalsha(ctx, compareAndDeleteScript, key, token)
	n, err := intOf(rep, err)
	if err != nil {
		return false, wrap(ctx, "compare-and-delete", err)
	}
	return n > 0, nil
}

// CompareAndExtend implements quorum.Node with a Lua compare-and-pexpire.
func (r *Redis) CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	px, err := ms(ttl)
	if err != nil {
		return false, err
	}
	rep, err := r.evalsha(ctx, compareAndExtendScript, key, token, px)
	n, err := intOf(rep, err)
	if err != nil {
		return false, wrap(ctx, "compare-and-extend", err)
	}
	return n > 0, nil
}

// Get implements quorum.Node. A key without an expiry (set behind the
// proxy's back) reports pttl = -1ms, as PTTL's -1 does; the proxy itself
// never stores one.
func (r *Redis) Get(ctx context.Context, key string) (token string, pttl time.Duration, ok bool, err error) {
	rep, err := r.evalsha(ctx, getScript, key)
	if err != nil {
		return "", 0, false, wrap(ctx, "GET", err)
	}
	if rep.null {
		return "", 0, false, nil
	}
	return parseGet(rep)
}

func parseGet(rep reply) (string, time.Duration, bool, error) {
	if rep.kind == '*' && len(rep.elems) == 2 {
		v, p := rep.elems[0], rep.elems[1]
		if v.kind == '$' && !v.null && p.kind == ':' {
			return v.str, time.Duration(p.num) * time.Millisecond, true, nil
		}
	}
	return "", 0, false, fmt.Errorf("backend: GET: unexpected script reply %+v", rep)
}

// Delete implements quorum.Node with DEL.
func (r *Redis) Delete(ctx context.Context, key string) (bool, error) {
	n, err := intOf(r.do(ctx, key, "del", key))
	if err != nil {
		return false, wrap(ctx, "DEL", err)
	}
	return n > 0, nil
}

// Expire implements quorum.Node with PEXPIRE.
func (r *Redis) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	px, err := ms(ttl)
	if err != nil {
		return false, err
	}
	n, err := intOf(r.do(ctx, key, "pexpire", key, px))
	if err != nil {
		return false, wrap(ctx, "PEXPIRE", err)
	}
	return n == 1, nil
}

// Close closes the connection pool. Safe to call twice.
func (r *Redis) Close() error {
	r.watch.stop()
	r.mux.close()
	if err := r.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("backend: close %s: %w", r.name, err)
	}
	return nil
}

// ceilMillis converts a ttl to whole milliseconds, rounding up: a backend key
// that outlives the lock's validity by under a millisecond is safe, one
// that expires before it is not (and PX 0 is an error).
func ceilMillis(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, ErrInvalidTTL
	}
	return int64((ttl + time.Millisecond - 1) / time.Millisecond), nil
}

// wrap names the failed command. When the caller's ctx is done, go-redis
// reports a socket timeout; the ctx error is wrapped as well so that
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

// Info returns the raw text of INFO section ("" for the default set).
func (r *Redis) Info(ctx context.Context, section string) (string, error) {
	var cmd *redis.StringCmd
	if section == "" {
		cmd = r.client.Info(ctx)
	} else {
		cmd = r.client.Info(ctx, section)
	}
	text, err := cmd.Result()
	if err != nil {
		return "", wrap(ctx, "INFO", err)
	}
	return text, nil
}

// RunID returns the server's run_id, which changes on every restart: a
// changed run_id means the node may have lost its keys.
func (r *Redis) RunID(ctx context.Context) (string, error) {
	text, err := r.Info(ctx, "server")
	if err != nil {
		return "", err
	}
	id, ok := infoField(text, "run_id")
	if !ok || id == "" {
		return "", errors.New("backend: INFO server has no run_id")
	}
	return id, nil
}

// Role returns the server's replication role ("master" or "slave") and, for
// a master, how many replicas are attached.
func (r *Redis) Role(ctx context.Context) (role string, connectedSlaves int, err error) {
	text, err := r.Info(ctx, "replication")
	if err != nil {
		return "", 0, err
	}
	role, ok := infoField(text, "role")
	if !ok {
		return "", 0, errors.New("backend: INFO replication has no role")
	}
	if v, ok := infoField(text, "connected_slaves"); ok {
		if connectedSlaves, err = strconv.Atoi(v); err != nil {
			return "", 0, fmt.Errorf("backend: INFO replication: connected_slaves %q: %w", v, err)
		}
	}
	return role, connectedSlaves, nil
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
