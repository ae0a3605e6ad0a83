-- @sesamecare-oss/redlock 1.4.0, build/scripts.js ACQUIRE_SCRIPT (npm package), SHA1 1b77b94aa78451d55dfa97e18819bfbfc596cb5b

  
  -- Protected call to execute SELECT command if supported
  redis.pcall("SELECT", tonumber(ARGV[1]))


  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[2], "PX", ARGV[3])
  end

  -- Return the number of entries added.
  return #KEYS
