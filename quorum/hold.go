package quorum

// WriteHolder is a Node that can hold back the writes of the commands it is
// given until they are released, so that the commands of rounds started
// together leave for its server in one write rather than one each. Every
// Hold is followed soon by one Release, and a caller never waits for a
// reply between the two. A node may still write held commands while
// another caller holds it: holds are hints, never a wait.
type WriteHolder interface {
	Hold()
	Release()
}

// HoldWrites holds the writes of every node that can (a WriteHolder) until
// ReleaseWrites: the rounds started in between reach each server together.
// A node that cannot hold writes as it always does.
func (c *Cluster) HoldWrites() {
	for _, h := range c.holders {
		h.Hold()
	}
}

// ReleaseWrites ends a HoldWrites: what the rounds started since asked
// of the nodes is written.
func (c *Cluster) ReleaseWrites() {
	for _, h := range c.holders {
		h.Release()
	}
}

// writeHolders are the nodes of nodes that can hold writes.
func writeHolders(nodes []Node) []WriteHolder {
	var hs []WriteHolder
	for _, n := range nodes {
		if h, ok := n.(WriteHolder); ok {
			hs = append(hs, h)
		}
	}
	return hs
}
