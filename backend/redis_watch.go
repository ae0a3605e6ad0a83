package backend

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
)

// releaseChannel is the Pub/Sub channel on which a backend announces the
// keys that releases deleted, to every proxy in front of it. Pub/Sub spans
// all dbs of a server, so a non-zero db gets its own channel.
const releaseChannel = "redlockd:released"

// The release scripts publish inside the script, so a waiter on another
// proxy hears of the release without the releaser paying a round trip; and
// only when a waiter has marked the key (KEYS[2], see waitKey), so that an
// uncontended release publishes nothing. setNXMarkedScript is a waiter's
// SET NX: when the key is held it marks it, in the same atomic step, until
// ARGV[3] ms from now unless an earlier mark lasts longer.
var (
	compareAndDeleteNotifyScript = newScript(
		`if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("del",KEYS[1]) if redis.call("exists",KEYS[2]) == 1 then redis.call("publish",ARGV[2],KEYS[1]) end return 1 end return 0`)
	deleteNotifyScript = newScript(
		`local n = redis.call("del",KEYS[1]) if n > 0 and redis.call("exists",KEYS[2]) == 1 then redis.call("publish",ARGV[1],KEYS[1]) end return n`)
	setNXMarkedScript = newScript(
		`if redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then return 1 end if redis.call("pttl",KEYS[2]) < tonumber(ARGV[3]) then redis.call("set",KEYS[2],"1","PX",ARGV[3]) end return 0`)
)

// waitKey is where waiters mark key on a node, named like the quorum's
// HoldsKey and FenceKey.
func waitKey(key string) string { return "redlockd:wait:{" + key + "}" }

// waitKeys returns keys followed by their wait keys, as the multi-key
// release script takes them.
func waitKeys(keys []string) []string {
	out := append(make([]string, 0, 2*len(keys)), keys...)
	for _, k := range keys {
		out = append(out, waitKey(k))
	}
	return out
}

// defaultHealthInterval is how often a watched node looks at its server.
const defaultHealthInterval = time.Second

// redisWatch runs what a Cluster asks of a node in the background: the
// release subscription and the look at the server's identity (run_id,
// role). Both start on the first watcher and stop on Close.
type redisWatch struct {
	name     string
	client   *redis.Client
	channel  string
	interval time.Duration
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	releases []func(key string)
	servers  []func(quorum.ServerInfo)
	pubsub   *redis.PubSub
}

// newRedisWatch returns the watch of a node; its client is set once the
// client exists, since the client's connect hook is the watch's.
func newRedisWatch(name string, db int, interval time.Duration) *redisWatch {
	w := &redisWatch{name: name, channel: releaseChannel, interval: orDefault(interval, defaultHealthInterval)}
	if db != 0 {
		w.channel += ":" + strconv.Itoa(db)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// The Redis node notifies only releases of keys that waiters marked.
var _ quorum.AsyncWaitMarker = (*Redis)(nil)

// CompareAndDeleteNotify implements quorum.ReleaseNotifier.
func (r *Redis) CompareAndDeleteNotify(ctx context.Context, key, token string) (bool, error) {
	rep, err := r.evalsha2(ctx, compareAndDeleteNotifyScript, key, waitKey(key), token, r.watch.channel)
	n, err := intOf(rep, err)
	if err != nil {
		return false, wrap(ctx, "compare-and-delete", err)
	}
	return n > 0, nil
}

// DeleteNotify implements quorum.ReleaseNotifier.
func (r *Redis) DeleteNotify(ctx context.Context, key string) (bool, error) {
	rep, err := r.evalsha2(ctx, deleteNotifyScript, key, waitKey(key), r.watch.channel)
	n, err := intOf(rep, err)
	if err != nil {
		return false, wrap(ctx, "DEL", err)
	}
	return n > 0, nil
}

// SetNXMarked implements quorum.WaitMarker.
func (r *Redis) SetNXMarked(ctx context.Context, key, token string, ttl, mark time.Duration) (bool, error) {
	px, err := ms(ttl)
	if err != nil {
		return false, err
	}
	markPX, err := ms(mark)
	if err != nil {
		return false, err
	}
	rep, err := r.evalsha2(ctx, setNXMarkedScript, key, waitKey(key), token, px, markPX)
	n, err := intOf(rep, err)
	if err != nil {
		return false, wrap(ctx, "marked SET NX", err)
	}
	return n > 0, nil
}

// WatchReleases implements quorum.ReleaseNotifier over one Pub/Sub
// connection per node, which reconnects and resubscribes after the server
// restarts. Releases announced while it is down are missed (waiters then
// retry on their jitter).
func (r *Redis) WatchReleases(fn func(key string)) {
	w := r.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.releases = append(w.releases, fn)
	if len(w.releases) == 1 {
		w.wg.Add(1)
		go w.subscribeLoop()
	}
}

// WatchServer implements quorum.ServerWatcher: the server is looked at
// every health interval and on every new connection of the lock commands,
// before the connection carries any of them.
func (r *Redis) WatchServer(fn func(quorum.ServerInfo)) {
	w := r.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.servers = append(w.servers, fn)
	if len(w.servers) == 1 {
		w.wg.Add(1)
		go w.monitorLoop()
	}
}

// stop ends both loops and waits for them. Safe to call twice.
func (w *redisWatch) stop() {
	w.mu.Lock()
	w.closed = true
	w.cancel()
	ps := w.pubsub
	w.mu.Unlock()
	if ps != nil {
		_ = ps.Close() // unblocks a pending receive
	}
	w.wg.Wait()
}

func (w *redisWatch) watchers() ([]func(string), []func(quorum.ServerInfo)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.releases, w.servers
}

func (w *redisWatch) report(in quorum.ServerInfo) {
	_, fns := w.watchers()
	for _, fn := range fns {
		fn(in)
	}
}

// monitorLoop looks at the server now and then every interval.
func (w *redisWatch) monitorLoop() {
	defer w.wg.Done()
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		in := w.probe()
		if w.ctx.Err() != nil {
			return // a look cut short by Close says nothing about the server
		}
		w.report(in)
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *redisWatch) probe() quorum.ServerInfo {
	ctx, cancel := context.WithTimeout(w.ctx, max(w.interval, time.Second))
	defer cancel()
	text, err := w.client.Do(ctx, "info", "server", "replication").Text()
	if isServerError(err) { // a server older than 7.0 takes one section only
		text, err = w.client.Do(ctx, "info").Text()
	}
	if err != nil {
		return quorum.ServerInfo{Err: wrap(ctx, "INFO", err)}
	}
	return parseServerInfo(text)
}

func isServerError(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// parseServerInfo reads run_id, role, connected_slaves and
// uptime_in_seconds from INFO text.
func parseServerInfo(text string) quorum.ServerInfo {
	in := quorum.ServerInfo{Uptime: -1}
	in.RunID, _ = infoField(text, "run_id")
	role, _ := infoField(text, "role")
	in.Replica = role == "slave"
	if v, ok := infoField(text, "connected_slaves"); ok {
		in.Replicas, _ = strconv.Atoi(v)
	}
	if v, ok := infoField(text, "uptime_in_seconds"); ok {
		// It is the difference of two clocks read in whole seconds, so it
		// may exceed the true uptime by up to a second; the Cluster wants
		// a lower bound.
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
			in.Uptime = time.Duration(max(secs-1, 0)) * time.Second
		}
	}
	if in.RunID == "" {
		in.Err = errors.New("backend: INFO has no run_id")
	}
	return in
}

// onConnect looks at the server over a fresh connection of the lock
// commands, before the connection carries any: a restarted server is known
// to the Cluster before it can vote.
func (w *redisWatch) onConnect(ctx context.Context, nc net.Conn) error {
	if _, fns := w.watchers(); len(fns) == 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	reps, err := roundTrip(nc, []string{"info", "server", "replication"})
	if err == nil && reps[0].err() != nil { // a server older than 7.0 takes one section only
		reps, err = roundTrip(nc, []string{"info"})
	}
	var text string
	if err == nil {
		text, err = reps[0].str, reps[0].err()
	}
	return w.lookedAt(text, err)
}

// onClientConnect is onConnect for the go-redis connections, which carry
// the node's other commands (and this watch's own).
func (w *redisWatch) onClientConnect(ctx context.Context, cn *redis.Conn) error {
	if _, fns := w.watchers(); len(fns) == 0 {
		return nil
	}
	text, err := cn.Info(ctx, "server", "replication").Result()
	if isServerError(err) {
		text, err = cn.Info(ctx).Result()
	}
	return w.lookedAt(text, err)
}

// lookedAt reports a look taken on a new connection. Only a broken
// connection fails it; a server that refuses INFO is reported, not cut off.
func (w *redisWatch) lookedAt(text string, err error) error {
	if err != nil {
		w.report(quorum.ServerInfo{Err: err})
		if isServerError(err) { // serverError is a redis.Error too
			return nil
		}
		return err
	}
	w.report(parseServerInfo(text))
	return nil
}

// subscribeLoop delivers the keys announced on the release channel. A
// silent connection (no message, no pong for three intervals) is replaced:
// a half-open TCP connection would otherwise be waited on forever.
func (w *redisWatch) subscribeLoop() {
	defer w.wg.Done()
	ps := w.newPubSub(nil)
	heard := time.Now()
	for ps != nil {
		msg, err := ps.ReceiveTimeout(w.ctx, w.interval)
		if m, ok := msg.(*redis.Message); ok {
			w.deliver(m.Payload)
		}
		switch {
		case w.ctx.Err() != nil:
			return
		case err == nil:
			heard = time.Now()
		case isTimeout(err) && time.Since(heard) < 3*w.interval:
			_ = ps.Ping(w.ctx)
		case isTimeout(err):
			ps, heard = w.newPubSub(ps), time.Now()
		case !w.pause(100 * time.Millisecond):
			return // closed while backing off from a refused connection
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// newPubSub replaces old (if any) with a fresh subscription; nil once the
// node is closed.
func (w *redisWatch) newPubSub(old *redis.PubSub) *redis.PubSub {
	if old != nil {
		_ = old.Close()
	}
	// Subscribed outside the lock: the dial runs the connect hook, which
	// reads the watchers.
	ps := w.client.Subscribe(w.ctx, w.channel)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		_ = ps.Close()
		return nil
	}
	w.pubsub = ps
	return ps
}

func (w *redisWatch) deliver(key string) {
	fns, _ := w.watchers()
	for _, fn := range fns {
		fn(key)
	}
}

func (w *redisWatch) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}
