-- @sesamecare-oss/redlock 1.4.0, build/scripts.js RELEASE_SCRIPT (npm package), SHA1 df51f6837dcfe303d334e6abea9aeae192bab216

  
  -- Protected call to execute SELECT command if supported
  redis.pcall("SELECT", tonumber(ARGV[1]))


  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[2] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
