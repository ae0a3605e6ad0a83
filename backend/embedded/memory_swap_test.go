package embedded

import (
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

func memSwap(old, next string, ttl time.Duration) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.CompareAndSwap, Key: memK, Old: old, Token: next, TTL: ttl}
}

// The CompareAndSwap cases join TestMemoryDo's table.
func init() {
	memDoCases = append(memDoCases,
		memDoCase{name: "CompareAndSwap held by old", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
			cmd: memSwap("a", "b", time.Second), want: quorum.Reply{OK: true, N: 1},
			after: map[string]string{memK: "b"}, ttls: map[string]time.Duration{memK: time.Second}},
		memDoCase{name: "CompareAndSwap held by another", before: []quorum.Cmd{memSetNX(memK, "c", time.Minute)},
			cmd: memSwap("a", "b", time.Second), want: quorum.Reply{N: 0},
			after: map[string]string{memK: "c"}, ttls: map[string]time.Duration{memK: time.Minute}},
		memDoCase{name: "CompareAndSwap absent", cmd: memSwap("a", "b", time.Second), want: quorum.Reply{N: -1},
			after: map[string]string{memK: ""}},
		memDoCase{name: "CompareAndSwap without ttl", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
			cmd: memSwap("a", "b", 0), want: quorum.Reply{Err: backend.ErrInvalidTTL},
			after: map[string]string{memK: "a"}},
	)
}
