-- Redisson 3.52.0, redisson/src/main/java/org/redisson/renewal/LockTask.java, renew (the script is the next line, byte for byte)
local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;
