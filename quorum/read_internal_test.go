package quorum

import (
	"testing"
	"time"
)

func TestAgreedTTL(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		pttls   []time.Duration
		q       int
		elapsed time.Duration
		want    time.Duration
	}{
		{"q=1", []time.Duration{3 * s}, 1, 0, 3 * s},
		{"q-th largest", []time.Duration{1 * s, 5 * s, 3 * s, 4 * s, 2 * s}, 3, 0, 3 * s},
		{"elapsed subtracted", []time.Duration{5 * s, 4 * s}, 2, s, 3 * s},
		{"floor", []time.Duration{5 * s, 10 * time.Millisecond}, 2, s, time.Millisecond},
		{"no expiry largest", []time.Duration{-1, 2 * s, 1 * s}, 2, 0, 2 * s},
		{"no expiry q-th", []time.Duration{-1, -1, 1 * s}, 2, 0, -1},
		{"ties", []time.Duration{2 * s, 2 * s, 2 * s}, 2, 0, 2 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agreedTTL(tt.pttls, tt.q, tt.elapsed); got != tt.want {
				t.Errorf("agreedTTL(%v, %d, %v) = %v, want %v", tt.pttls, tt.q, tt.elapsed, got, tt.want)
			}
		})
	}
}
