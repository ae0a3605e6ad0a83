-- @sesamecare-oss/redlock 1.4.0, build/scripts.js EXTEND_SCRIPT (npm package), SHA1 820e9778d2b6733e9ed771e4be90ae73a95a6f3b

  
  -- Protected call to execute SELECT command if supported
  redis.pcall("SELECT", tonumber(ARGV[1]))


  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[2] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[2], "PX", ARGV[3])
  end

  -- Return the number of entries updated.
  return #KEYS
