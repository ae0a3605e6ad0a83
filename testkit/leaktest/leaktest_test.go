package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// The shared options hide go-redis's redial only: a goroutine of the test's
// own is still found while it runs, and not once it ended.
func TestOptionsFindOtherGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { <-stop; close(done) }()
	if err := goleak.Find(Options(before)...); err == nil {
		t.Error("a running goroutine was not found")
	}
	close(stop)
	<-done
	if err := goleak.Find(Options(before)...); err != nil {
		t.Errorf("after it ended: %v", err)
	}
}
