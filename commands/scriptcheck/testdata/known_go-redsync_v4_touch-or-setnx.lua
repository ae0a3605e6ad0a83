-- go-redsync v4 touch-or-setnx, SHA1 b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
