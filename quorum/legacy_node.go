package quorum

import (
	"context"
	"time"
)

// Node is one independent lock backend (a Redis master, or an in-memory
// node in embedded mode). Every method must honour ctx's deadline: the
// cluster gives each call its own per-node timeout and counts a call that
// has not returned by then as a "no" vote.
//
// A ttl is always > 0: the cluster never asks a node to store a key without
// an expiry.
type Node interface {
	// Name identifies the node in errors, logs and INFO (e.g. "127.0.0.1:6379").
	Name() string
	// SetNX stores key=token with ttl if key is absent. It reports whether it
	// stored it (false: the key is held, by any token).
	SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Set stores key=token with ttl unconditionally (a forced takeover).
	Set(ctx context.Context, key, token string, ttl time.Duration) error
	// CompareAndDelete deletes key if and only if it holds token, atomically.
	CompareAndDelete(ctx context.Context, key, token string) (bool, error)
	// CompareAndExtend sets key's ttl if and only if it holds token, atomically.
	CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Get returns the token stored at key and its remaining ttl; ok is false
	// when the key is absent.
	Get(ctx context.Context, key string) (token string, pttl time.Duration, ok bool, err error)
	// Delete removes key unconditionally and reports whether it existed.
	Delete(ctx context.Context, key string) (bool, error)
	// Expire sets key's ttl unconditionally and reports whether the key existed.
	Expire(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Close releases the node's resources. Safe to call twice.
	Close() error
}
