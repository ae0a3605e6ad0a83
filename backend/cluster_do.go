package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
)

// maxRedirects bounds how often one send of a command follows MOVED or
// ASK. A send after TRYAGAIN starts again at the slot's master with a
// budget of its own: during a migration every TRYAGAIN of a command
// reached through ASK is followed by one more ASK, so a budget shared by
// the sends would run out while the migration lasts (see tryAgain).
const maxRedirects = 5

// Do implements quorum.Node: cmd goes to the master of its keys' slot
// (every key of a Cmd must share it: the keys the proxy keeps for a lock
// key k carry the hash tag {k}; a Cmd whose keys do not share a slot gets
// Redis Cluster's CROSSSLOT error). The answer names the shard that gave
// it (Reply.Shard), for the shard's quarantine. The lock horizon lives on
// every shard; subscriptions live on the first seed's node.
func (cl *Cluster) Do(deadline time.Time, cmd quorum.Cmd, rcv quorum.Receiver) {
	switch cmd.Kind {
	case quorum.Subscribe, quorum.Unsubscribe:
		cl.pubsub.Do(deadline, cmd, rcv)
		return
	case quorum.Publish:
		cmd.DB = 0 // pub/sub spans the databases
	}
	if cmd.DB != 0 {
		rcv.Receive(quorum.Reply{Err: ErrClusterDB})
		return
	}
	if IsServerWide(cmd.Kind) {
		cl.everyShard(deadline, cmd, rcv)
		return
	}
	slot, ok := cmdSlot(&cmd)
	if !ok {
		rcv.Receive(quorum.Reply{Err: fmt.Errorf("backend: %w", errCrossSlot)})
		return
	}
	(&clusterCall{cl: cl, cmd: cmd, deadline: deadline, rcv: rcv, slot: slot}).send()
}

// cmdSlot is the slot that every key of cmd hashes to; false when they do
// not share one.
func cmdSlot(cmd *quorum.Cmd) (int, bool) {
	at := -1
	same := func(k string) bool {
		s := slot.Of(k)
		if at < 0 {
			at = s
		}
		return s == at
	}
	if cmd.Key != "" && !same(cmd.Key) {
		return 0, false
	}
	for _, k := range cmd.Keys {
		if !same(k) {
			return 0, false
		}
	}
	if cmd.Mark != "" && !same(cmd.Mark) {
		return 0, false
	}
	return max(at, 0), true
}

// clusterCall is one Cmd on its way to the master of its slot, following
// redirects.
type clusterCall struct {
	cl       *Cluster
	cmd      quorum.Cmd
	deadline time.Time
	rcv      quorum.Receiver
	slot     int
	sh       *shard // where it was sent last
	// redirects counts the MOVED and ASK followed since the call was
	// last sent to the slot's master after TRYAGAIN.
	redirects int
}

// send sends the call to the master of its slot; with no master known,
// after a refresh of the topology.
func (cc *clusterCall) send() {
	t := cc.cl.topo.Load()
	if t == nil || t.slots[cc.slot] == nil {
		cc.afterRefresh(cc.sendKnown)
		return
	}
	cc.sh = t.slots[cc.slot]
	cc.sh.node.Do(cc.deadline, cc.cmd, cc)
}

// sendKnown sends the call once a refresh ended; still no master is that
// node's failure.
func (cc *clusterCall) sendKnown() {
	t := cc.cl.topo.Load()
	if t == nil || t.slots[cc.slot] == nil {
		cc.fail(errSlotUnserved)
		return
	}
	cc.send()
}

// afterRefresh starts a read of the topology (or joins the one on its
// way) and runs next once it ends, or fails the call at its deadline.
func (cc *clusterCall) afterRefresh(next func()) {
	done := cc.cl.startRefresh()
	go func() {
		t := time.NewTimer(time.Until(cc.deadline))
		defer t.Stop()
		select {
		case <-done:
			next()
		case <-t.C:
			cc.fail(fmt.Errorf("%w: %w", errNoTopology, context.DeadlineExceeded))
		case <-cc.cl.ctx.Done():
			cc.fail(ErrClosed)
		}
	}()
}

func (cc *clusterCall) fail(err error) {
	cc.rcv.Receive(quorum.Reply{Err: fmt.Errorf("backend: slot %d: %w", cc.slot, err)})
}

// Receive takes a master's answer: a redirect is followed (MOVED: the
// slot moved for good; ASK: this key is at the importing master for now),
// anything else is the node's answer, named by the shard that gave it.
func (cc *clusterCall) Receive(rep quorum.Reply) {
	var se ServerError
	if rep.Err != nil && errors.As(rep.Err, &se) {
		if cc.redirect(se) || cc.tryAgain(se) {
			return
		}
		if se.Code == "CLUSTERDOWN" || se.Code == "EXECABORT" {
			cc.cl.refreshSoon() // a failover or a migration may be under way
		}
	}
	if cc.sh != nil {
		rep.Shard = cc.sh.group
	}
	cc.rcv.Receive(rep)
}

// redirect follows a MOVED or an ASK; false for any other error, or once
// the call has followed maxRedirects.
func (cc *clusterCall) redirect(se ServerError) bool {
	if (se.Code != "MOVED" && se.Code != "ASK") || cc.redirects >= maxRedirects {
		return false
	}
	at, addr, ok := parseRedirect(se.Text)
	if !ok || at != cc.slot {
		return false
	}
	cc.redirects++
	if se.Code == "ASK" {
		return cc.ask(addr)
	}
	if cc.cl.moved(at, addr) {
		cc.cl.refreshSoon()
		cc.send()
		return true
	}
	cc.afterRefresh(cc.send)
	return true
}

// ask sends the call once to the importing master at addr, after ASKING.
// A master the topology does not know has no shard to name: the call
// waits for a refresh instead.
func (cc *clusterCall) ask(addr string) bool {
	sh := cc.cl.shardAt(addr)
	if sh == nil {
		cc.afterRefresh(cc.send)
		return true
	}
	cc.sh = sh
	sh.node.do(cc.deadline, cc.cmd, cc, true)
	return true
}

// tryAgainPause is how long a call waits before sending again after
// TRYAGAIN: a migration is moving its keys, which takes a MIGRATE.
const tryAgainPause = 5 * time.Millisecond

// tryAgain sends the call again, to the slot's master, after TRYAGAIN,
// while its deadline leaves time for it; false otherwise. A multi-key
// command in a slot under migration gets TRYAGAIN until the migration
// ends whenever some of its keys are absent: the migrating master answers
// so while it holds some of them, and the importing master (reached
// through ASK) while it lacks any. The proxy's multi-key scripts name
// keys that mostly do not exist (a lock's wait mark, fair queue and
// reservation beside the lock), so such a command waits for the whole
// migration, which only its deadline bounds: each send meets ASK again
// once the keys have moved, hence the fresh redirect budget.
func (cc *clusterCall) tryAgain(se ServerError) bool {
	if se.Code != "TRYAGAIN" || time.Until(cc.deadline) < 2*tryAgainPause {
		return false
	}
	cc.cl.refreshSoon()
	time.AfterFunc(tryAgainPause, func() {
		if cc.cl.ctx.Err() != nil {
			cc.fail(ErrClosed)
			return
		}
		cc.redirects = 0
		cc.send()
	})
	return true
}

// parseRedirect reads "MOVED <slot> <host:port>" (or ASK).
func parseRedirect(text string) (int, string, bool) {
	f := strings.Fields(text)
	if len(f) != 3 {
		return 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	return n, f[2], err == nil && n >= 0 && n < slot.Count
}

// horizonKeyAt is the lock horizon's key on the master serving slot.
func horizonKeyAt(s int) string {
	return quorum.HorizonKey + ":{" + slot.Tag(s) + "}"
}

// everyShard runs a horizon command on every master, at a horizon key in
// its slots, and answers for all of them: a raise holds only where every
// master took it (the shortest ttl), a read is the longest horizon (and
// fails where any master fails), since a lock granted through any shard
// may be on any of them.
func (cl *Cluster) everyShard(deadline time.Time, cmd quorum.Cmd, rcv quorum.Receiver) {
	t := cl.topo.Load()
	if t == nil || len(t.shards) == 0 {
		cc := &clusterCall{cl: cl, deadline: deadline, rcv: rcv}
		cc.afterRefresh(func() {
			if cl.topo.Load() == nil {
				cc.fail(errNoTopology)
				return
			}
			cl.everyShard(deadline, cmd, rcv)
		})
		return
	}
	agg := &shardsAnswer{kind: cmd.Kind, left: len(t.shards), rcv: rcv}
	for _, s := range t.shards {
		part := cmd
		part.Key = horizonKeyAt(s.first)
		(&clusterCall{cl: cl, cmd: part, deadline: deadline, rcv: agg, slot: s.first}).send()
	}
}
