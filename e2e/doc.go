// Package e2e holds end-to-end tests of redlockd: real clients against the
// proxy, in front of real redis-server processes, and the built binary
// run as a user runs it.
//
// Two tests run the proxy in embedded mode instead, over its in-memory
// nodes, as redlockd runs without --backends, because that mode is the
// behaviour they check (TestReplicatedScriptPublishOnceEmbedded,
// TestSelectEmbeddedDBs); nothing else here claims Redis behaviour from an
// in-memory node.
package e2e
