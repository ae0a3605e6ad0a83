-- pottery Redlock acquired-ttl, SHA1 f5f7bd3a3aa4a63c507c1155c5ea1219b350d992, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

                if redis.call('get', KEYS[1]) == ARGV[1] then
                    local pttl = redis.call('pttl', KEYS[1])
                    return (pttl > 0) and pttl or 0
                else
                    return 0
                end
            