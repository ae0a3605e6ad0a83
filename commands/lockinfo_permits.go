package commands

import "github.com/redlockd/redlockd/quorum"

// LOCKINFO of a semaphore's key (LOCK … PERMITS n): its "holds" are the
// permits held, per backend the slots it holds and, for the key, the
// slots held by one token on a majority.

// permitsOf is the n of the semaphore key holds: the marker a majority
// agrees on, or else any backend's.
func permitsOf(in quorum.Inspection) (int, bool) {
	if n, ok := quorum.ParsePermitsMarker(in.Holder.Token); ok && in.Holder.Held {
		return n, true
	}
	for _, v := range in.Nodes {
		if n, ok := quorum.ParsePermitsMarker(v.Token); ok && v.Err == nil && v.Present {
			return n, true
		}
	}
	return 0, false
}

// lockHolds is the key's "holds": the permits held of a semaphore, the
// agreed hold count of an owner lock.
func lockHolds(info lockInfo, held bool) optInt {
	if info.permits != nil {
		return optInt{int64(info.permits.Held), true}
	}
	return agreedHolds(info, held)
}

// backendHolds is backend i's "holds": the slots it holds of a semaphore,
// the hold count of an owner lock.
func backendHolds(info lockInfo, i int) optInt {
	if info.permits != nil {
		n := info.permits.Nodes[i]
		return optInt{int64(n), n >= 0}
	}
	return info.holdsAt(i)
}
