package commands

import (
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// durationObserver keeps the last command's reported duration and
// whether, and with what duration, it brought its round.
type durationObserver struct {
	mu       sync.Mutex
	d        time.Duration
	hasRound bool
	roundD   time.Duration
}

func (o *durationObserver) CommandDone(_, _ string, d time.Duration, round *quorum.Report) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d, o.hasRound, o.roundD = d, round != nil, 0
	if round != nil {
		o.roundD = round.D
	}
}

func (o *durationObserver) last() (time.Duration, bool, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.d, o.hasRound, o.roundD
}

// A started command is timed by its round when it is reported with it;
// one whose rounds are reported on their own (OWNER, PERMITS, FENCE,
// KEEPALIVE, a WAIT) from where it handed itself on, so its duration
// covers its rounds (the slow node's delay here); and one answered at
// once, with no round, as 0.
func TestStartedCommandDurations(t *testing.T) {
	obs := &durationObserver{}
	h, s, slow := reportsHandler(t, &countingObserver{more: make(chan struct{}, 1)})
	h.opts.Observer = obs
	const delay = 20 * time.Millisecond
	slow.SetDelay(delay)
	for _, tc := range []struct {
		words    []string
		hasRound bool
		atLeast  time.Duration // 0: exactly 0
	}{
		{[]string{"SET", "a", "t", "NX", "PX", "10000"}, true, time.Nanosecond},
		{[]string{"UNLOCK", "a", "t"}, true, delay},
		{[]string{"LOCK", "b", "10000", "OWNER", "me"}, false, delay},
		{[]string{"LOCK", "c", "10000", "PERMITS", "2"}, false, delay},
		{[]string{"LOCK", "d", "10000", "FENCE"}, false, delay},
		{[]string{"LOCK", "e", "10000", "KEEPALIVE"}, false, time.Nanosecond},
		{[]string{"SET", "f", "t", "NX", "PX", "x"}, false, 0},
	} {
		if !startWait(t, h, s, tc.words, new(recorder), make(chan struct{})) {
			t.Fatalf("%v has no asynchronous form", tc.words)
		}
		d, hasRound, roundD := obs.last()
		switch {
		case hasRound != tc.hasRound:
			t.Errorf("%v: reported with a round %v, want %v", tc.words, hasRound, tc.hasRound)
		case hasRound && d != roundD:
			t.Errorf("%v: duration %v, want its round's %v", tc.words, d, roundD)
		case tc.atLeast == 0 && d != 0:
			t.Errorf("%v: duration %v, want 0 (answered at once)", tc.words, d)
		case d < tc.atLeast:
			t.Errorf("%v: duration %v, want at least %v", tc.words, d, tc.atLeast)
		}
	}
}
