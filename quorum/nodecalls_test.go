package quorum_test

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The node commands the tests run directly, bypassing the quorum.

func nodeSet(ctx context.Context, n quorum.Node, key, token string, ttl time.Duration) error {
	return quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Set, Key: key, Token: token, TTL: ttl}).Err
}

func nodeSetNX(ctx context.Context, n quorum.Node, key, token string, ttl time.Duration) (bool, error) {
	r := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl})
	return r.OK, r.Err
}

func nodeGet(ctx context.Context, n quorum.Node, key string) (string, time.Duration, bool, error) {
	r := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Get, Key: key})
	return r.Token, r.TTL, r.OK, r.Err
}

func nodeDelete(ctx context.Context, n quorum.Node, key string) (bool, error) {
	r := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Delete, Key: key})
	return r.OK, r.Err
}
