package commands

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(&command{name: "lockinfo", arity: 2, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdLockInfo})
}

// lockInfo is what LOCKINFO gathers: every backend's view of the key, of
// its fencing counter and of its hold count, read concurrently.
type lockInfo struct {
	lock, fence, holds quorum.Inspection
	// permits is the slots' view of a semaphore's key; nil for other keys.
	permits *quorum.PermitsView
	// readers is each backend's count of live readers of a key held
	// SHARED (-1: not held so there).
	readers []int64
}

// cmdLockInfo: LOCKINFO key -> a map (a flat array in RESP2) with the
// quorum's verdict and a "backends" entry holding one map per backend. It
// reads only; nothing on the backends changes.
func (h *Handler) cmdLockInfo(c *call) {
	key := c.arg(0)
	info := h.inspectLock(c.s.Context(), h.clusterOf(c.s), key)
	v := verdict(info.lock)
	c.w.WriteMap(9)
	c.w.WriteBulkString("key")
	c.w.WriteBulkString(key)
	c.w.WriteBulkString("verdict")
	c.w.WriteBulkString(v)
	c.w.WriteBulkString("token")
	writeOptString(c.w, info.lock.Holder.Token, v == "held")
	c.w.WriteBulkString("pttl")
	c.w.WriteInt(lockPTTL(info.lock.Holder))
	c.w.WriteBulkString("quorum")
	c.w.WriteInt(int64(info.lock.Quorum))
	c.w.WriteBulkString("answered")
	c.w.WriteInt(int64(info.lock.Answered))
	c.w.WriteBulkString("fence")
	writeOptInt(c.w, maxFence(info.fence))
	c.w.WriteBulkString("holds")
	writeOptInt(c.w, lockHolds(info, v == "held"))
	c.w.WriteBulkString("backends")
	c.w.WriteArray(len(info.lock.Nodes))
	for i := range info.lock.Nodes {
		writeBackendView(c.w, info, i)
	}
}

func (h *Handler) inspectLock(ctx context.Context, cl *quorum.Cluster, key string) lockInfo {
	var info lockInfo
	var wg sync.WaitGroup
	wg.Go(func() { info.fence = cl.Inspect(ctx, quorum.FenceKey(key)) })
	wg.Go(func() { info.holds = cl.Inspect(ctx, quorum.HoldsKey(key)) })
	wg.Go(func() { info.readers = cl.SharedReaders(ctx, key) })
	info.lock = cl.Inspect(ctx, key)
	if n, ok := permitsOf(info.lock); ok {
		p := cl.InspectPermits(ctx, key, n)
		info.permits = &p
	}
	wg.Wait()
	return info
}

// verdict is what GET/PTTL would conclude from the same answers.
func verdict(in quorum.Inspection) string {
	switch {
	case !in.HasQuorum():
		return "no quorum"
	case in.Holder.Held:
		return "held"
	}
	return "not held"
}

func writeBackendView(w Writer, info lockInfo, i int) {
	v := info.lock.Nodes[i]
	w.WriteMap(6)
	w.WriteBulkString("backend")
	w.WriteBulkString(v.Node)
	w.WriteBulkString("token")
	writeOptString(w, v.Token, v.Err == nil && v.Present)
	w.WriteBulkString("pttl")
	w.WriteInt(nodePTTL(v))
	w.WriteBulkString("error")
	writeOptString(w, nodeError(v), v.Err != nil)
	w.WriteBulkString("fence")
	writeOptInt(w, nodeFence(info.fence.Nodes[i]))
	w.WriteBulkString("holds")
	writeOptInt(w, backendHolds(info, i))
}

// lockPTTL is the remaining ms of the lock that the verdict names: -2
// where it is not held (a key of another type holds no lock).
func lockPTTL(hd quorum.Holder) int64 {
	hd.ErrReply = ""
	return pttlReply(hd, time.Millisecond)
}

// nodePTTL answers as Redis's PTTL would on that node: -2 absent (or no
// answer), -1 without expiry; a key of another type has its own.
func nodePTTL(v quorum.NodeView) int64 {
	switch {
	case v.Err != nil || (!v.Present && v.ErrReply == ""):
		return -2
	case v.PTTL < 0:
		return -1
	}
	return truncMillis(v.PTTL)
}

func nodeError(v quorum.NodeView) string {
	if v.Err == nil {
		return ""
	}
	return strings.TrimPrefix(v.Err.Error(), v.Node+": ")
}

// nodeFence is the fencing counter one backend keeps; ok false when it
// keeps none, did not answer, or keeps one that FENCE refuses to read.
func nodeFence(v quorum.NodeView) optInt {
	if v.Err != nil || !v.Present {
		return optInt{}
	}
	n, err := strconv.ParseInt(v.Token, 10, 64)
	return optInt{n, err == nil && n >= 0 && n <= quorum.MaxFence}
}

// maxFence is the largest counter any backend keeps: the next FENCE on
// the key is greater than it.
func maxFence(in quorum.Inspection) optInt {
	var top optInt
	for _, v := range in.Nodes {
		if f := nodeFence(v); f.ok {
			top = optInt{max(top.n, f.n), true}
		}
	}
	return top
}

// nodeHolds is one backend's hold count of a reentrant (OWNER) lock: the
// count stored beside the lock for its token, or 1 when none is stored (a
// missing or stale count means one hold). ok is false for other locks.
func nodeHolds(lock, holds quorum.NodeView) optInt {
	if lock.Err != nil || !lock.Present || !quorum.IsOwnerToken(lock.Token) {
		return optInt{}
	}
	if holds.Err == nil && holds.Present {
		if tok, n, ok := quorum.ParseHolds(holds.Token); ok && tok == lock.Token {
			return optInt{n, true}
		}
	}
	return optInt{1, true}
}

// agreedHolds is how many UNLOCKs free a held reentrant lock: the lock is
// free once fewer than a quorum of its backends still count a hold, so it
// is the quorum-th largest count among the backends holding its token.
func agreedHolds(info lockInfo, held bool) optInt {
	if !held {
		return optInt{}
	}
	var counts []int64
	for i, v := range info.lock.Nodes {
		if v.Err == nil && v.Present && v.Token == info.lock.Holder.Token {
			if h := info.holdsAt(i); h.ok {
				counts = append(counts, h.n)
			}
		}
	}
	q := info.lock.Quorum
	if len(counts) < q {
		return optInt{}
	}
	slices.Sort(counts)
	return optInt{counts[len(counts)-q], true}
}

func writeOptString(w Writer, s string, ok bool) {
	if !ok {
		w.WriteNull()
		return
	}
	w.WriteBulkString(s)
}

// optInt is an integer that may be absent (written as null).
type optInt struct {
	n  int64
	ok bool
}

func writeOptInt(w Writer, v optInt) {
	if !v.ok {
		w.WriteNull()
		return
	}
	w.WriteInt(v.n)
}

// holdsAt is backend i's hold count: an OWNER lock's holds (nodeHolds), or
// the live readers of a key held SHARED.
func (info lockInfo) holdsAt(i int) optInt {
	v := info.lock.Nodes[i]
	if v.Err == nil && v.Present && v.Token == quorum.SharedMarker && info.readers[i] >= 0 {
		return optInt{info.readers[i], true}
	}
	return nodeHolds(v, info.holds.Nodes[i])
}
