package commands

// Script bodies of go-redsync v4 (scripts.go of v4.18.1, unchanged since
// v4.17), byte for byte: Redis and the library name them by SHA1.

// go-redsync v4 deleteScript (Mutex.Unlock).
// SHA1 e950836ed1e694540c503ef9972b8de518044d3b.
const redsyncDelete = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`

// go-redsync v4 touchScript (Mutex.Extend).
// SHA1 d75bb8b5bd13532ddedd17762e772346e39b321e.
const redsyncTouch = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`

// go-redsync v4 touchWithSetNXScript (Mutex.Extend with WithSetNXOnExtend).
// SHA1 b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79.
const redsyncTouchOrSetNX = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
`
