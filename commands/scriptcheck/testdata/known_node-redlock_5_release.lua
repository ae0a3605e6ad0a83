-- node-redlock 5 release, SHA1 e4612211c9f8f51c257e26e056b0a654b3187242, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
