// Package e2e holds end-to-end tests of redlockd: real clients against the
// proxy, in front of real redis-server processes, and the built binary
// run as a user runs it.
package e2e
