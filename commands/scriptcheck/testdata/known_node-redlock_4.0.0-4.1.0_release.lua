-- node-redlock 4.0.0-4.1.0 release, SHA1 517e7ed95f00c0c4a209c6a7afcc6ab797d30b85, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

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
