-- redis-semaphore 5.7.0, lib/mutex/refresh.js expireIfEqualLua (npm package), SHA1 594683e49a64ebaf975caf5f8079a1d097c438f1

  local key = KEYS[1]
  local identifier = ARGV[1]
  local lockTimeout = ARGV[2]

  local value = redis.call('get', key)

  if value == identifier then
    redis.call('pexpire', key, lockTimeout)
    return 1
  end

  return 0
  