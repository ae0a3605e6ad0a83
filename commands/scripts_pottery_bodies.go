package commands

// Script bodies of pottery's Redlock (pottery/redlock.py), byte for byte,
// unchanged from v2.3.7 to v3.0.1.

// pottery Redlock._acquired_script (remaining pttl if owner, else 0).
// SHA1 f5f7bd3a3aa4a63c507c1155c5ea1219b350d992.
const potteryAcquired = `
                if redis.call('get', KEYS[1]) == ARGV[1] then
                    local pttl = redis.call('pttl', KEYS[1])
                    return (pttl > 0) and pttl or 0
                else
                    return 0
                end
            `

// pottery Redlock._extend_script.
// SHA1 ba015a80261b616e7a62d35df0b8e3edbe6c9414.
const potteryExtend = `
                if redis.call('get', KEYS[1]) == ARGV[1] then
                    return redis.call('pexpire', KEYS[1], ARGV[2])
                else
                    return 0
                end
            `

// pottery Redlock._release_script.
// SHA1 a4aada0b36710970eedaaaeec4a6b7d8c78c4f80.
const potteryRelease = `
                if redis.call('get', KEYS[1]) == ARGV[1] then
                    return redis.call('del', KEYS[1])
                else
                    return 0
                end
            `
