-- node-redlock 4.1.0 extend, SHA1 1d48b4c6fea2cdadc46b3346de5c2eaf121c7bb3, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

	-- Return 0 if an entry exists with a *different* lock value.
	for i, key in ipairs(KEYS) do
	  if redis.call("get", key) ~= ARGV[1] then
	    return 0
	  end
	end

	-- Update the entry for each provided key.
	for i, key in ipairs(KEYS) do
	  redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries updated.
	return #KEYS
