// Package compat is redlockd's compatibility suite: unchanged client
// libraries and tools (go-redis, go-redsync, rueidis, rueidislock, redis-py, node redis, ioredis,
// node-redlock 5 and 4, redis-semaphore, @sesamecare-oss/redlock,
// redis-cli, redis-benchmark, and Redisson's RLock scripts replayed) run
// against a redlockd served in-process over three real redis-server
// backends. The lock libraries' scenarios run against a plain redis-server
// first, proving the scenario itself, then against redlockd.
//
// The package has no code of its own; everything is in its tests. The
// Python and Node clients live in python/ and node/ and are run as child
// processes; a test skips only when the runtime itself is missing, never
// because a client failed.
package compat
