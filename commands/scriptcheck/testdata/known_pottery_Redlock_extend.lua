-- pottery Redlock extend, SHA1 ba015a80261b616e7a62d35df0b8e3edbe6c9414, as in redlockd's built-in table of library bodies (commands/scripts_*_bodies.go)

                if redis.call('get', KEYS[1]) == ARGV[1] then
                    return redis.call('pexpire', KEYS[1], ARGV[2])
                else
                    return 0
                end
            