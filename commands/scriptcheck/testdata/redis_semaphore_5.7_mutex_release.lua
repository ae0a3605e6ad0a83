-- redis-semaphore 5.7.0, lib/mutex/release.js delIfEqualLua (npm package), SHA1 7157921a7cc7cfba979acf6d63f073151df17d12

  local key = KEYS[1]
  local identifier = ARGV[1]

  if redis.call('get', key) == identifier then
    return redis.call('del', key)
  end

  return 0
  