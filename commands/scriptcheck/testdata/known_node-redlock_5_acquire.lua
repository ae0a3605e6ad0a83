-- node-redlock 5 acquire, SHA1 96da70f7716f27d278a5218544df37fd8b0a5e4c, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
