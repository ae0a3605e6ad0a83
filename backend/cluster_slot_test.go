package backend

import "testing"

// The slots of these keys are the ones CLUSTER KEYSLOT of redis-server
// 7.0 answers.
func TestKeySlotMatchesRedisCluster(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182}, {"bar", 5061}, {"123456789", 12739},
		{"{user1000}.following", 3443}, {"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015}, {"foo{bar}{zap}", 5061},
		{"", 0},
	} {
		if got := keySlot(tc.key); got != tc.slot {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

func TestSlotTagCoversEverySlot(t *testing.T) {
	for _, slot := range []int{0, 1, 5460, 16383} {
		if got := keySlot("redlockd:horizon:{" + slotTag(slot) + "}"); got != slot {
			t.Errorf("slotTag(%d) hashes to %d", slot, got)
		}
	}
}
