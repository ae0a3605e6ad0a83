// Package compat is redlockd's compatibility suite: unchanged client
// libraries and tools (go-redis, go-redsync, redis-py, node redis, ioredis,
// node-redlock, redis-cli, redis-benchmark) run against a redlockd served
// in-process over three real redis-server backends.
//
// The package has no code of its own; everything is in its tests. The
// Python and Node clients live in python/ and node/ and are run as child
// processes; a test skips only when the runtime itself is missing, never
// because a client failed.
package compat
