package compat

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// sessionTTL is the harness's --session-ttl: short, so that a lock taken
// without an expiry by a killed client is seen to vanish quickly.
const sessionTTL = time.Second

// instance is one redlockd in front of three real redis-servers.
type instance struct {
	*redlocktest.Instance
}

// startRedlockd serves redlockd on a free loopback port over three fresh
// redis-server processes; the test's cleanup shuts it down and waits for
// it.
func startRedlockd(t testing.TB) *instance {
	t.Helper()
	return &instance{redlocktest.Start(t, harnessOptions)}
}

// startSecond serves a second redlockd in front of in's backends, as a
// second proxy behind a load balancer would be.
func startSecond(t testing.TB, in *instance) *instance {
	t.Helper()
	return &instance{redlocktest.StartOver(t, in.Backends, harnessOptions)}
}

var harnessOptions = redlocktest.Options{
	Commands: commands.Options{SessionTTL: sessionTTL, Version: "compat"},
}

// testCtx is a per-test context bounded so a hung client fails the test
// instead of blocking the suite.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
