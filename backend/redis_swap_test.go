package backend

import (
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// swapCases: CompareAndSwap on a real server, beside the memory node's
// cases (backend/embedded/memory_swap_test.go).
var swapCases = []redisDoCase{
	{name: "CompareAndSwap held by old", setup: [][]any{set("k", tok, min1)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndSwap, Key: "k", Old: tok, Token: "next", TTL: 5 * time.Second},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": "next"}, pttlOver: map[string]time.Duration{"k": 4 * time.Second}},
	{name: "CompareAndSwap held by another", setup: [][]any{set("k", other, min1)},
		cmd:   quorum.Cmd{Kind: quorum.CompareAndSwap, Key: "k", Old: tok, Token: "next", TTL: 5 * time.Second},
		state: map[string]string{"k": other}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "CompareAndSwap absent", cmd: quorum.Cmd{Kind: quorum.CompareAndSwap, Key: "k", Old: tok, Token: "next", TTL: 5 * time.Second},
		want: quorum.Reply{N: -1}, state: map[string]string{"k": ""}},
}

func TestRedisDoSwap(t *testing.T) { runDoCases(t, swapCases) }
