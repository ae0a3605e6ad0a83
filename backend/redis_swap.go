package backend

import "github.com/redlockd/redlockd/quorum"

// compareAndSwapScript hands a lock to a new token (SET key new PX ms IFEQ
// old of newer servers, which 7.x lacks). KEYS: key; ARGV: old token, new
// token, ttl-ms. 1 swapped, 0 held by another token, -1 absent.
var compareAndSwapScript = newScript(`local v = redis.call("get",KEYS[1])
if v == ARGV[1] then redis.call("set",KEYS[1],ARGV[2],"px",ARGV[3]) return 1 end
if v then return 0 end
return -1`)

func (c *call) buildSwap(cmd quorum.Cmd, _ string) {
	c.script(compareAndSwapScript, readYes, []string{cmd.Key}, cmd.Old, cmd.Token, c.ms(cmd.TTL))
}
