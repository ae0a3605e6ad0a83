package commands

// Script bodies of bsm/redislock (redislock.go of v0.9.4), byte for byte:
// Redis and the library name them by SHA1. Its obtain script is not
// among them: it overwrites a key whose value shares a prefix with the
// caller's, a compare that only each backend can make, so it runs as a
// replicated script.

// bsm/redislock refresh (Lock.Refresh).
// SHA1 a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf.
const bsmRefresh = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`

// bsm/redislock release (Lock.Release).
// SHA1 cf0e94b2e9ffc7e04395cf88f7583fc309985910.
const bsmRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// bsm/redislock remaining ttl (Lock.TTL).
// SHA1 6484da7d58920897fdc22b7f9afd1a3d47524ea8.
const bsmPTTL = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`
