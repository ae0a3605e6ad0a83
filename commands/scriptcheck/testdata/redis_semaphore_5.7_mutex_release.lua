-- redis-semaphore 5.7.0, lib/mutex/release.js delIfEqualLua (npm package)

  local key = KEYS[1]
  local identifier = ARGV[1]

  if redis.call('get', key) == identifier then
    return redis.call('del', key)
  end

  return 0
  