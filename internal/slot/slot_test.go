package slot

import "testing"

// The slots of these keys are the ones CLUSTER KEYSLOT of redis-server
// 7.0 answers.
func TestOfMatchesRedisCluster(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182}, {"bar", 5061}, {"123456789", 12739},
		{"{user1000}.following", 3443}, {"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015}, {"foo{bar}{zap}", 5061},
		{"", 0},
	} {
		if got := Of(tc.key); got != tc.slot {
			t.Errorf("Of(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

func TestTagCoversEverySlot(t *testing.T) {
	for s := range Count {
		if got := Of("x:{" + Tag(s) + "}:y"); got != s {
			t.Fatalf("Tag(%d) hashes to %d", s, got)
		}
	}
}

// A kept key lives in its lock key's slot, and two lock keys never share
// one kept key.
func TestTaggedSharesTheSlotAndNamesOneKey(t *testing.T) {
	keys := []string{"res", "{user}:1", "{user}:2", "a{b", "a}b", "}{", "{}", "{a}", "a", "{0}a"}
	seen := map[string]string{}
	for _, k := range keys {
		kept := "redlockd:holds:" + Tagged(k)
		if Of(kept) != Of(k) {
			t.Errorf("%q: kept key %q in slot %d, the key in %d", k, kept, Of(kept), Of(k))
		}
		if o, dup := seen[kept]; dup {
			t.Errorf("%q and %q share the kept key %q", o, k, kept)
		}
		seen[kept] = k
	}
	if Tagged("res") != "{res}" {
		t.Errorf("a key without braces keeps its old form: got %q", Tagged("res"))
	}
}

// Key names the same key as prefix + Tagged, in one allocation (race
// builds allocate more, so the count is checked only in the plain build).
func TestKeyIsPrefixedTaggedInOneAllocation(t *testing.T) {
	for _, k := range []string{"lock:1", "{user:7}:a", "a}b"} {
		if got, want := Key("redlockd:wait:", k), "redlockd:wait:"+Tagged(k); got != want {
			t.Errorf("Key(%q) = %q, want %q", k, got, want)
		}
	}
	if raceBuild {
		return
	}
	if n := testing.AllocsPerRun(100, func() { _ = Key("redlockd:wait:", "lock:1") }); n != 1 {
		t.Errorf("Key allocates %.0f times, want 1", n)
	}
}
