package backend

import (
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// The lock horizon (quorum.HorizonKey): a key whose own ttl is at least
// the remaining life of every lock granted on the node. The proxy raises
// it before a grant's yes counts, and reads it on the other nodes when one
// restarts (the auto restart quarantine).

var (
	// raiseHorizonScript sets the horizon's ttl to max(current, ARGV[1]):
	// it never shortens it, since another proxy may have raised it for a
	// longer lock. A horizon without expiry (written by hand) lasts
	// forever already. It answers the ttl the horizon has afterwards.
	raiseHorizonScript = newScript(`
local px = tonumber(ARGV[1])
local cur = redis.call("pttl", KEYS[1])
if cur == -1 or cur >= px then return cur end
redis.call("set", KEYS[1], "1", "px", px)
return px`)
)

// buildHorizon builds RaiseHorizon (TTL: the ttl to raise it to; reply TTL:
// its ttl afterwards, OK) and ReadHorizon (reply TTL: its remaining ttl, 0
// when absent, negative when it has no expiry; OK when present).
func (c *call) buildHorizon(cmd quorum.Cmd, _ string) {
	if cmd.Kind == quorum.RaiseHorizon {
		c.script(raiseHorizonScript, readHorizonTTL, []string{cmd.Key}, c.ms(cmd.TTL))
	} else {
		c.command(readHorizonTTL, "pttl", cmd.Key)
	}
}

// readHorizonTTL reads a horizon's pttl: -2 (absent) is 0, not OK.
func readHorizonTTL(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if err != nil || n == -2 {
		return quorum.Reply{}, err
	}
	if n < 0 {
		return quorum.Reply{OK: true, TTL: -1}, nil
	}
	return quorum.Reply{OK: true, TTL: time.Duration(n) * time.Millisecond}, nil
}
