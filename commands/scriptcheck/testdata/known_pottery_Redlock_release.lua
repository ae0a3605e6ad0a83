-- pottery Redlock release, SHA1 a4aada0b36710970eedaaaeec4a6b7d8c78c4f80, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

                if redis.call('get', KEYS[1]) == ARGV[1] then
                    return redis.call('del', KEYS[1])
                else
                    return 0
                end
            