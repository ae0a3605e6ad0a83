-- redis-py Lock release, SHA1 c3f8721cbb97f72bc19e972846bd7aaf91901658, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    