// Package faulttest is the fault matrix: each test drives the lock service
// over real redis-server processes while faults/ injects one kind of
// failure, and states the outcome the Redlock contract promises for it.
// Histories go through testkit/check, so a test fails on any overlap of
// critical sections or lost update, not only on wrong return values.
//
// The CI versions are short. REDLOCKD_LONG=1 runs each contention scenario
// for longer and prints one line of figures per scenario (see README,
// "Reliability"):
//
//	REDLOCKD_LONG=1 go test -race -count=1 -v -run . ./faulttest/ | grep SCENARIO
package faulttest
