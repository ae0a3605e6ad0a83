-- go-redsync v4 touch, SHA1 d75bb8b5bd13532ddedd17762e772346e39b321e, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
