// Package faults injects failures between the lock service and real
// redis-server processes: an in-process TCP proxy in front of a backend
// that can add latency, swallow traffic (a blackhole), reset connections in
// the middle of a reply, or answer every command with an error of its own
// (a -LOADING server is hard to provoke for real). Process faults (SIGKILL,
// SIGSTOP/SIGCONT, restart with or without an append-only file) are
// redistest's; Backends ties both together for a test.
//
// The proxy's mode applies to connections already open as well as new
// ones, because a connection pool keeps its connections across a fault.
package faults
