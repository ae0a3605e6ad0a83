-- node-redlock 4.0.0 extend, SHA1 acaf90b4697bb48bb5f603e9e613a54df7536c70, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

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
	return table.getn(KEYS)
