package backend

import "github.com/redlockd/redlockd/quorum"

// Watch implements quorum.Node. The topology is read now and every health
// interval; every master's node looks at its server as a single node
// does (on each new connection, before it carries a command, and every
// interval), and the watcher gets the cluster's look with one entry per
// shard after each. The first seed's node carries the release channel and
// the clients' subscriptions: a Redis Cluster delivers every PUBLISH to
// every node.
func (cl *Cluster) Watch(w quorum.Watcher) bool {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return true
	}
	if w.Invalidated != nil {
		// Each master knows the changes of its own slots' keys.
		cl.invalids = append(cl.invalids, w.Invalidated)
		if cl.watcher != nil { // else watchNodeLocked does it below
			for _, n := range cl.nodes {
				n.Watch(quorum.Watcher{Invalidated: w.Invalidated})
			}
		}
	}
	if cl.watcher != nil {
		// A later watcher (the clients' pub/sub hub): its releases and
		// messages come from the pub/sub node, as the first one's do.
		cl.mu.Unlock()
		if w.Released != nil || w.Message != nil {
			cl.pubsub.Watch(quorum.Watcher{Released: w.Released, Message: w.Message})
		}
		return true
	}
	cl.watcher = &w
	for addr, n := range cl.nodes {
		cl.watchNodeLocked(addr, n)
	}
	cl.wg.Add(1)
	cl.mu.Unlock()
	go cl.refreshLoop()
	return true
}

// watchNodeLocked starts the watch of a master's node.
func (cl *Cluster) watchNodeLocked(addr string, n *Redis) {
	in := quorum.Watcher{Server: func(info quorum.ServerInfo) { cl.looked(addr, info) }}
	if n == cl.pubsub {
		in.Released, in.Message = cl.watcher.Released, cl.watcher.Message
	}
	n.Watch(in)
	for _, fn := range cl.invalids {
		n.Watch(quorum.Watcher{Invalidated: fn})
	}
}

// looked records a look at the master at addr and reports the cluster's.
func (cl *Cluster) looked(addr string, in quorum.ServerInfo) {
	cl.mu.Lock()
	cl.looks[addr] = in
	cl.mu.Unlock()
	cl.report()
}

// report gives the watcher the cluster's look. Reports are serialized, so
// that the watcher never sees an older look after a newer one.
func (cl *Cluster) report() {
	cl.reportMu.Lock()
	defer cl.reportMu.Unlock()
	cl.mu.Lock()
	w := cl.watcher
	cl.mu.Unlock()
	if w == nil || w.Server == nil {
		return
	}
	if in, ok := cl.info(); ok {
		w.Server(in)
	}
}

// refreshLoop reads the topology now and then every interval.
func (cl *Cluster) refreshLoop() {
	defer cl.wg.Done()
	tick(cl.ctx, orDefault(cl.opts.HealthInterval, defaultHealthInterval), func() bool {
		select {
		case <-cl.startRefresh():
			return true
		case <-cl.ctx.Done():
			return false
		}
	})
}
