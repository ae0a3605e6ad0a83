// Package leaktest is the goroutine-leak check every test package runs in
// its TestMain, with the exceptions they all share.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// goRedisRedial is go-redis's background redial: after as many failed dials
// in a row as the pool has connections, the pool probes the address in a
// goroutine of its own, once a second, until a dial succeeds or it sees
// the pool closed. Tests that stop a backend reach that state; the
// goroutine ends within a second of the client's Close, which may be after
// the test.
const goRedisRedial = "github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"

// childStarter is the goroutine that forks every child process a test
// starts. It lives as long as the process on purpose: its locked thread is
// the children's parent, and they die when it does.
const childStarter = "github.com/redlockd/redlockd/testkit/childproc.starter"

// Options returns the shared options followed by extra.
func Options(extra ...goleak.Option) []goleak.Option {
	return append([]goleak.Option{goleak.IgnoreAnyFunction(goRedisRedial), goleak.IgnoreAnyFunction(childStarter)}, extra...)
}

// VerifyTestMain runs m, then fails the run if goroutines other than the
// shared exceptions outlive the tests.
func VerifyTestMain(m *testing.M, extra ...goleak.Option) {
	goleak.VerifyTestMain(m, Options(extra...)...)
}
