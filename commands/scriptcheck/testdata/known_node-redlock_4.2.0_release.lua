-- node-redlock 4.2.0 release, SHA1 0f0f23b9048b36752b5be114f357ba083449f908, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

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
