package commands

import (
	"strings"
	"testing"
	"time"
)

// A started RENEW whose lock a connection binds while its round is in
// flight is answered from a goroutine of its own (onRenewed). Its
// Observer report must still name its round (extend/ok, 3 calls), as
// the report of the same RENEW without the binding does; the round's
// report is only valid until the continuation returns (quorum.Reporter).
func TestZReviewStartedRenewBoundMeanwhileReport(t *testing.T) {
	obs := newCountingObserver()
	h, s, last := reportsHandler(t, obs)
	exec := func(words ...string) string {
		var r recorder
		h.Exec(s, byteArgs(words), &r)
		return r.String()
	}
	if got := exec("SET", "k", "tok", "NX", "PX", "10000"); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	obs.mu.Lock()
	obs.done = nil
	obs.mu.Unlock()
	obs.take()

	last.SetOpDelay("CompareAndExtend", 300*time.Millisecond)
	var r recorder
	done := make(chan struct{})
	if !h.Start(s, NewRequest(byteArgs([]string{"RENEW", "k", "tok", "30000"})), &r, func() { close(done) }) {
		t.Fatal("RENEW not started")
	}
	// While the renewal waits for the slow node, the connection binds
	// the lock (a forced SET: a session lock of the same token).
	if got := exec("SET", "k", "tok"); got != "+OK" {
		t.Fatalf("forced SET: %s", got)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RENEW not done")
	}
	if !strings.HasPrefix(r.String(), ":") {
		t.Fatalf("RENEW: %s", r.String())
	}
	time.Sleep(50 * time.Millisecond)
	var renew string
	for _, rep := range obs.take() {
		if strings.HasPrefix(rep, "CommandDone renew") {
			renew = rep
		}
	}
	if want := "CommandDone renew/ok round=extend/ok calls=3"; renew != want {
		t.Fatalf("RENEW's report: %q, want %q", renew, want)
	}
}
