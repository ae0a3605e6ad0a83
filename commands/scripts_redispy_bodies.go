package commands

// Script bodies of redis-py's Lock (redis/lock.py, and the same text in
// redis/asyncio/lock.py), byte for byte. Identical in Debian's
// python3-redis 4.3.4 and in redis-py v8.1.0.

// redis-py Lock.LUA_RELEASE_SCRIPT (4.3.4 … 8.1.0).
// SHA1 c3f8721cbb97f72bc19e972846bd7aaf91901658.
const redisPyRelease = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    `

// redis-py Lock.LUA_EXTEND_SCRIPT (4.3.4 … 8.1.0).
// SHA1 a4e8783852e6b949f9ef3a97212805108459a890.
const redisPyExtend = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        local expiration = redis.call('pttl', KEYS[1])
        if not expiration then
            expiration = 0
        end
        if expiration < 0 then
            return 0
        end

        local newttl = ARGV[2]
        if ARGV[3] == "0" then
            newttl = ARGV[2] + expiration
        end
        redis.call('pexpire', KEYS[1], newttl)
        return 1
    `

// redis-py Lock.LUA_REACQUIRE_SCRIPT (4.3.4 … 8.1.0).
// SHA1 1cac51482acf5858da00f6d685d68f886cd6b6b2.
const redisPyReacquire = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    `
