package commands

import (
	"strings"
	"testing"
)

// TestScriptRandomAgreesOnEveryNode: a script that writes what
// math.random draws writes the same on three embedded nodes, seeded or
// not, as on three redis-servers that ran the same scripts: each node
// draws from a generator of its own, as a Redis server does.
func TestScriptRandomAgreesOnEveryNode(t *testing.T) {
	f := newFixture(t, Options{})
	for _, body := range []string{
		`return redis.call('set', KEYS[1], math.random(1000000), 'px', 10000)`,
		`math.randomseed(tonumber(ARGV[1])); return redis.call('set', KEYS[1], math.random(1000000), 'px', 10000)`,
	} {
		for _, key := range []string{"r1", "r2", "r3"} {
			if got := f.do("EVAL", body, "1", key, "42"); got != "+OK" {
				t.Fatalf("EVAL %q on %s: %s", body, key, got)
			}
			if got := f.do("GET", key); !strings.HasPrefix(got, "$") {
				t.Fatalf("GET %s: %s", key, got)
			}
		}
	}
}
