package backend

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
)

// releaseChannel is the Pub/Sub channel on which a backend announces the
// keys that releases deleted in its db 0, to every proxy in front of it.
// Pub/Sub spans all dbs of a server, so each other db n has its own
// channel, releaseChannel+":n" (see dbChannel): the message is the key
// alone, as it always was, and the channel says the db. A proxy that
// knows db 0 only subscribes to releaseChannel alone and never hears of
// another db's releases, which could wake its waiters on the wrong key.
const releaseChannel = "redlockd:released"

// dbChannel is the release channel of the server's db n.
func dbChannel(n int) string {
	if n == 0 {
		return releaseChannel
	}
	return releaseChannel + ":" + strconv.Itoa(n)
}

// WaitKey is where waiters mark key on a node, named like the quorum's
// HoldsKey and FenceKey.
func WaitKey(key string) string { return slot.Key(waitPrefix, key) }

// waitKeys returns keys followed by their wait keys, as the multi-key
// release script takes them.
func waitKeys(keys []string) []string {
	out := append(make([]string, 0, 2*len(keys)), keys...)
	for _, k := range keys {
		out = append(out, WaitKey(k))
	}
	return out
}

// defaultHealthInterval is how often a watched node looks at its server.
const defaultHealthInterval = time.Second

// redisWatch runs what a Cluster asks of a node in the background: the
// release subscription and the look at the server's identity (run_id,
// role). Both start on the first watcher and stop on Close. Each has a
// connection of its own, opened like the multiplexer's.
type redisWatch struct {
	name     string
	channels [quorum.DBs]string // channels[n] announces database n's releases
	dbsOf    map[string][]int   // each channel's databases (two where the URL names a db)
	interval time.Duration
	health   healthConn   // INFO: the periodic look at the server
	subCfg   *wire.Config // how the subscription connects
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	releases []func(db int, key string)
	servers  []func(quorum.ServerInfo)
	invalids []func(keys []string)
	sub      net.Conn // the subscription's connection, closed by stop
	subbing  bool     // the subscription loop runs

	// clients are the clients' pub/sub subscriptions, which share the
	// subscription connection with the release channels.
	clients clientSubs
}

// newRedisWatch returns the watch of a node whose URL names db base; its
// connection settings are set once they exist, since their connect hook
// is the watch's.
func newRedisWatch(name string, base int, interval time.Duration) *redisWatch {
	w := &redisWatch{name: name, interval: orDefault(interval, defaultHealthInterval), dbsOf: map[string][]int{}}
	for n := range w.channels {
		ch := dbChannel(serverDB(base, n))
		w.channels[n] = ch
		w.dbsOf[ch] = append(w.dbsOf[ch], n)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// Watch implements quorum.Node. The subscription delivers releases
// announced on the node's channel, reconnecting and resubscribing after
// the server restarts; releases announced while it is down are missed
// (waiters then retry on their jitter). The server is looked at every
// health interval and on every new connection, before the connection
// carries any command.
func (r *Redis) Watch(in quorum.Watcher) bool {
	// A node watched by a Cluster is about to serve locks: its lines
	// connect now rather than within the first lock's node timeout.
	r.mux.WarmUp()
	w := r.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true
	}
	if in.Released != nil {
		w.releases = append(w.releases, in.Released)
	}
	if in.Message != nil {
		w.clients.addWatcher(in.Message)
	}
	if in.Invalidated != nil {
		w.invalids = append(w.invalids, in.Invalidated)
		if len(w.invalids) == 1 && w.sub != nil {
			// A subscribed connection takes no CLIENT command: its next
			// connection turns the reports on before it subscribes.
			_ = w.sub.Close()
		}
	}
	if (in.Released != nil || in.Message != nil || in.Invalidated != nil) && !w.subbing {
		w.subbing = true
		w.wg.Add(1)
		go w.subscribeLoop()
	}
	if in.Server != nil {
		w.servers = append(w.servers, in.Server)
		if len(w.servers) == 1 {
			w.wg.Add(1)
			go w.monitorLoop()
		}
	}
	return true
}

// stop ends both loops and waits for them. Safe to call twice.
func (w *redisWatch) stop() {
	w.mu.Lock()
	w.closed = true
	w.cancel()
	sub := w.sub
	w.mu.Unlock()
	if sub != nil {
		_ = sub.Close() // unblocks a pending read
	}
	w.health.close()
	w.wg.Wait()
}

// watchers are the watchers of releases, of the server and of changed
// keys, as they stand.
func (w *redisWatch) watchers() ([]func(int, string), []func(quorum.ServerInfo), []func([]string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.releases, w.servers, w.invalids
}

func (w *redisWatch) report(in quorum.ServerInfo) {
	_, fns, _ := w.watchers()
	for _, fn := range fns {
		fn(in)
	}
}

// monitorLoop looks at the server now and then every interval.
func (w *redisWatch) monitorLoop() {
	defer w.wg.Done()
	tick(w.ctx, w.interval, func() bool {
		in := w.probe()
		if w.ctx.Err() != nil {
			return false // a look cut short by Close says nothing about the server
		}
		w.report(in)
		return true
	})
}

// tick runs fn now and then every interval, until ctx ends or fn returns
// false.
func tick(ctx context.Context, interval time.Duration, fn func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for fn() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *redisWatch) probe() quorum.ServerInfo {
	ctx, cancel := context.WithTimeout(w.ctx, max(w.interval, time.Second))
	defer cancel()
	text, err := readInfo(func(args ...string) (string, error) { return w.info(ctx, args...) })
	if err != nil {
		return quorum.ServerInfo{Err: err}
	}
	return parseServerInfo(text)
}

// info runs one INFO command over the health connection.
func (w *redisWatch) info(ctx context.Context, args ...string) (string, error) {
	text, err := w.health.text(ctx, args...)
	if err != nil {
		return "", wrap(ctx, "INFO", err)
	}
	return text, nil
}

// readInfo reads the server's INFO text through run: INFO server
// replication, or INFO alone from a server older than 7.0, which takes one
// section only.
func readInfo(run func(args ...string) (string, error)) (string, error) {
	if text, err := run("info", "server", "replication"); !isServerError(err) {
		return text, err
	}
	return run("info")
}

func isServerError(err error) bool {
	var se ServerError
	return errors.As(err, &se)
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
	if _, fns, _ := w.watchers(); len(fns) == 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	return w.lookedAt(readInfo(func(args ...string) (string, error) {
		reps, err := wire.RoundTrip(nc, args)
		if err != nil {
			return "", err
		}
		return reps[0].Str, reps[0].Err()
	}))
}

// lookedAt reports a look taken on a new connection. Only a broken
// connection fails it; a server that refuses INFO is reported, not cut off.
func (w *redisWatch) lookedAt(text string, err error) error {
	if err != nil {
		w.report(quorum.ServerInfo{Err: err})
		if isServerError(err) {
			return nil
		}
		return err
	}
	w.report(parseServerInfo(text))
	return nil
}

// subscribeLoop delivers the keys announced on the release channel, and
// the messages of the clients' subscriptions, over a connection of its
// own, reconnecting (and resubscribing) whenever it fails, until the node
// is closed.
func (w *redisWatch) subscribeLoop() {
	defer w.wg.Done()
	for {
		w.subscribe()
		if !w.pause(100 * time.Millisecond) {
			return
		}
	}
}

// subscribe runs one subscription until its connection fails. A silent
// connection (no message, no pong for three intervals) counts as failed:
// a half-open TCP connection would otherwise be waited on forever.
func (w *redisWatch) subscribe() {
	nc, err := w.subCfg.Open(w.ctx)
	if err != nil {
		return
	}
	defer nc.Close()
	if !w.setSub(nc) {
		return
	}
	defer w.setSub(nil)
	c := &wire.Conn{NC: nc}
	heard := time.Now()
	_ = nc.SetWriteDeadline(heard.Add(w.interval))
	defer w.clients.disconnected()
	reports := w.track(c)
	if reports != reportsOff {
		// Whatever changed while the link was down went unheard.
		defer w.invalidated(nil)
	}
	if w.clients.connected(c, slices.Collect(maps.Keys(w.dbsOf))) != nil {
		return
	}
	if reports != reportsOff {
		w.invalidated(nil)
	}
	w.listen(c, heard, reports == reportsRefused)
}

// listen reads the subscription until its connection fails. Where the
// server refused to report changes, its watchers of changes are told
// "anything may have changed" every interval instead: late, never
// missing.
func (w *redisWatch) listen(c *wire.Conn, heard time.Time, unreported bool) {
	flushed := heard
	for {
		_ = c.NC.SetReadDeadline(time.Now().Add(w.interval))
		rep, err := c.Read()
		switch {
		case err == nil:
			heard = time.Now()
			w.pushed(rep)
		case !isTimeout(err) || time.Since(heard) >= 3*w.interval:
			return
		default:
			if w.clients.ping(c, time.Now().Add(w.interval)) != nil {
				return
			}
		}
		if unreported && time.Since(flushed) >= w.interval {
			flushed = time.Now()
			w.invalidated(nil)
		}
	}
}

// reportsMode is whether a subscription connection carries the server's
// reports of changed keys.
type reportsMode uint8

const (
	reportsOff     reportsMode = iota // nobody watches changes
	reportsOn                         // the server reports every change
	reportsRefused                    // the server refused to report them
)

// invalidateChannel is where a server sends the keys that changed to a
// RESP2 connection that asked for them (CLIENT TRACKING … REDIRECT).
const invalidateChannel = "__redis__:invalidate"

// track turns on the server's client-side caching reports for every key
// (BCAST, no prefix) on the subscription connection itself, when a
// watcher wants them: the reports then arrive as messages on
// invalidateChannel, in order with the subscription's other messages. A
// server that refuses it (older than 6.0, or an ACL) reports nothing.
func (w *redisWatch) track(c *wire.Conn) reportsMode {
	if _, _, fns := w.watchers(); len(fns) == 0 {
		return reportsOff
	}
	_ = c.NC.SetReadDeadline(time.Now().Add(w.interval))
	defer c.NC.SetReadDeadline(time.Time{})
	if c.Write("client", "id") != nil {
		return reportsRefused
	}
	id, err := c.Read()
	if err != nil || id.Kind != ':' {
		return reportsRefused
	}
	if c.Write("client", "tracking", "on", "bcast", "redirect", strconv.FormatInt(id.Num, 10)) != nil {
		return reportsRefused
	}
	if ok, err := c.Read(); err != nil || ok.Kind != '+' {
		return reportsRefused
	}
	return reportsOn
}

// invalidated tells the watchers of changed keys (nil: anything may have
// changed).
func (w *redisWatch) invalidated(keys []string) {
	_, _, fns := w.watchers()
	for _, fn := range fns {
		fn(keys)
	}
}

// invalidation reads the keys of a report on invalidateChannel: an array
// of keys, or a null after a flush.
func invalidation(payload wire.Reply) (keys []string, ok bool) {
	switch {
	case payload.Null:
		return nil, true
	case payload.Kind != '*':
		return nil, false
	}
	keys = make([]string, 0, len(payload.Elems))
	for _, e := range payload.Elems {
		keys = append(keys, e.Str)
	}
	return keys, true
}

// setSub records the subscription's connection for stop to close; false
// once the node is closed.
func (w *redisWatch) setSub(nc net.Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed && nc != nil {
		return false
	}
	w.sub = nc
	return true
}

// pushed reads one push of the subscription: a message on a release
// channel carries a released key, and its channel the databases; other
// messages are the clients'; confirmations answer the Subscribe or
// Unsubscribe that waits for them; pongs only show the link is alive.
func (w *redisWatch) pushed(rep wire.Reply) {
	if rep.Kind != '*' || len(rep.Elems) < 3 {
		return
	}
	e := rep.Elems
	dbs, release := w.dbsOf[e[1].Str]
	switch kind := e[0].Str; {
	case kind == "message" && e[1].Str == invalidateChannel && (e[2].Kind == '*' || e[2].Null):
		if keys, ok := invalidation(e[2]); ok {
			w.invalidated(keys)
		}
	case kind == "message" && release:
		for _, db := range dbs {
			w.deliver(db, e[2].Str)
		}
	case kind == "message":
		w.clients.deliver(e[1].Str, "", e[2].Str)
	case kind == "pmessage" && len(e) == 4:
		w.clients.deliver(e[2].Str, e[1].Str, e[3].Str)
	case e[2].Kind == ':':
		w.clients.confirmed(kind, e[1].Str)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (w *redisWatch) deliver(db int, key string) {
	fns, _, _ := w.watchers()
	for _, fn := range fns {
		fn(db, key)
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
