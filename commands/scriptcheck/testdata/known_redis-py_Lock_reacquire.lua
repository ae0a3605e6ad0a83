-- redis-py Lock reacquire, SHA1 1cac51482acf5858da00f6d685d68f886cd6b6b2, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    