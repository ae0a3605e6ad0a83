-- go-redsync v4 delete, SHA1 e950836ed1e694540c503ef9972b8de518044d3b, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
