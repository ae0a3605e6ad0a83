package scriptcheck

import (
	"strings"
	"testing"
)

// TestCheckRefusesReservedStrings: a body may not write in the proxy's
// reserved namespace by a literal, as KEYS and ARGV may not name it: a
// release notice on its channel, a semaphore's marker as a value, a key
// of its own. Strings that only contain the word are fine.
func TestCheckRefusesReservedStrings(t *testing.T) {
	for _, src := range []string{
		`return redis.call('publish', 'redlockd:released', 'k')`,
		`return redis.call('set', KEYS[1], 'redlockd:permits:3', 'px', 60000)`,
		`local v = "redlockd:x"; return redis.call('set', KEYS[1], v, 'px', 60000)`,
		`return redis.call('get', 'redlockd:horizon')`,
		`return {'redlockd:'}`,
	} {
		_, err := Check(src)
		if err == nil || !strings.Contains(err.Error(), "in redlockd's reserved namespace") {
			t.Errorf("%s: %v, want a refusal of its reserved string", src, err)
		}
	}
	for _, src := range []string{
		`return redis.call('set', KEYS[1], 'my:redlockd:x', 'px', 60000)`,
		`return redis.call('set', KEYS[1], 'redlockd', 'px', 60000)`,
		`return redis.call('set', KEYS[1], 'Redlockd:x', 'px', 60000)`,
	} {
		if _, err := Check(src); err != nil {
			t.Errorf("%s: %v, want it admitted", src, err)
		}
	}
}
