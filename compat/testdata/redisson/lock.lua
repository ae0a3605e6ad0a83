-- Redisson 3.52.0, redisson/src/main/java/org/redisson/RedissonLock.java, tryLockInnerAsync (the script is the next line, byte for byte)
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);
