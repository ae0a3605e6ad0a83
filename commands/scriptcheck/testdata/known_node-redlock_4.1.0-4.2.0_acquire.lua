-- node-redlock 4.1.0-4.2.0 acquire, SHA1 e5a322e2634ef59a516e8ea150cb085afafee684, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

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
