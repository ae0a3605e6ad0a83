package backend

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
)

var _ quorum.HeldRestorer = (*Redis)(nil)

// restoreHeldScript stores an owner lock and its hold count where the lock
// key is absent, both with the same ttl, in one step.
var restoreHeldScript = redis.NewScript(`
if redis.call("exists", KEYS[1]) == 1 then return 0 end
redis.call("set", KEYS[1], ARGV[1], "px", ARGV[3])
redis.call("set", KEYS[2], ARGV[1] .. " " .. ARGV[2], "px", ARGV[3])
return 1`)

// RestoreHeld implements quorum.HeldRestorer.
func (r *Redis) RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error) {
	px, err := ceilMillis(ttl)
	if err != nil {
		return false, err
	}
	n, err := restoreHeldScript.Run(ctx, r.client, []string{key, holdsKey}, token, holds, px).Int64()
	if err != nil {
		return false, wrap(ctx, "restore-held", err)
	}
	return n == 1, nil
}
