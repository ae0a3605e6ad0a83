package compat

import "testing"

// nodeGroup is one group of a compat/node script and the checks it must
// report ("ok <check>").
type nodeGroup struct {
	group  string
	checks []string
}

// runNodeGroups runs each group of script against a plain redis-server,
// then against redlockd over three backends (eachTarget), answering the
// script's pause lines on the target's backends.
func runNodeGroups(t *testing.T, script string, groups []nodeGroup) {
	t.Helper()
	eachTarget(t, func(t *testing.T, tg target) {
		for _, g := range groups {
			t.Run(g.group, func(t *testing.T) {
				out := runNodeSteps(t, tg, script, g.group)
				want := []string{"PASS"}
				for _, c := range g.checks {
					want = append(want, "ok "+c)
				}
				wantLines(t, out, want...)
			})
		}
	})
}

// TestRedisSemaphore runs redis-semaphore 5.7 with ioredis 5 (and the
// Mutex once more with ioredis 6 over RESP3): Mutex
// (acquire, refresh across several intervals, release gone from every
// backend, acquiredExternally, onLockLost only when the key is really
// gone), RedlockMutex over three clients on db 1, 2 and 3, and Semaphore,
// which redlockd refuses naming LOCK … PERMITS.
func TestRedisSemaphore(t *testing.T) {
	runNodeGroups(t, "semaphore.mjs", []nodeGroup{
		{"mutex", []string{"mutex-acquire", "mutex-refresh", "mutex-release"}},
		{"mutex-resp3", []string{"mutex-acquire", "mutex-refresh", "mutex-release"}},
		{"external", []string{"mutex-acquired-externally"}},
		{"lost", []string{"mutex-lock-lost"}},
		{"redlock-mutex", []string{"redlock-mutex"}},
		{"semaphore", []string{"semaphore"}},
	})
}

// TestSesameRedlock runs @sesamecare-oss/redlock 1.4 with ioredis 5, its
// client and its db setting on db 0, then on db 2 (its scripts SELECT the
// db first): acquire, exclusivity between two holders, extend, release, a
// multi-resource lock, and using() across several automatic extensions;
// the keys are looked up in that db of every backend.
func TestSesameRedlock(t *testing.T) {
	var groups []nodeGroup
	for _, db := range []string{"db0", "db2"} {
		groups = append(groups, nodeGroup{db, []string{db + "-acquire", db + "-exclusive", db + "-extend", db + "-release", db + "-multi", db + "-using"}})
	}
	runNodeGroups(t, "sesame.mjs", groups)
}

// TestRedlock4 runs node-redlock 4.2 in its multi-server setup, three
// clients on db 1, 2 and 3 of one address, with ioredis 4 and with
// node-redis 3, and with one ioredis 4 client on db 0: lock, a second
// Redlock refused, extend, unlock.
func TestRedlock4(t *testing.T) {
	check := func(p string) []string {
		return []string{p + "-lock", p + "-exclusive", p + "-extend", p + "-unlock"}
	}
	runNodeGroups(t, "redlock4.mjs", []nodeGroup{
		{"ioredis4", check("ioredis4")},
		{"redis3", check("redis3")},
		{"ioredis4-db0", check("ioredis4-db0")},
	})
}
