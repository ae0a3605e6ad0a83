package compat

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// target is what a compat scenario talks to: a plain redis-server, whose
// run proves the scenario's own checks right, or redlockd over three real
// backends. Other is where a second client of the scenario connects: the
// same plain server, or a second redlockd in front of the same backends
// (two proxies, as behind a load balancer). Backends are the servers that
// hold the keys: the plain server itself, or redlockd's three.
type target struct {
	name     string
	addr     string
	other    string
	backends []*redistest.Server
}

// Target names, as the node scripts see them in TARGET.
const (
	plainTarget    = "redis-server"
	redlockdTarget = "redlockd"
)

// eachTarget runs scenario first against a fresh plain redis-server, then
// against a fresh redlockd over three fresh backends, each as a subtest
// named after the target.
func eachTarget(t *testing.T, scenario func(t *testing.T, tg target)) {
	t.Helper()
	t.Run(plainTarget, func(t *testing.T) {
		s := redistest.Start(t)
		scenario(t, target{name: plainTarget, addr: s.Addr(), other: s.Addr(), backends: []*redistest.Server{s}})
	})
	t.Run(redlockdTarget, func(t *testing.T) {
		in := startRedlockd(t)
		second := startSecond(t, in)
		scenario(t, target{name: redlockdTarget, addr: in.Addr, other: second.Addr, backends: in.Backends})
	})
}

// backendDB is a client of database db of s, closed by the test's
// cleanup, for looking at what a scenario left on a backend.
func backendDB(t *testing.T, s *redistest.Server, db int) *redis.Client {
	t.Helper()
	if db == 0 {
		return s.Client()
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db, DisableIdentity: true, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
