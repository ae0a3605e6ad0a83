package main

import (
	"context"
	"errors"
)

// target is what one redis-benchmark run talks to: a redis-server
// directly, or redlockd over its backends.
type target struct {
	addr string
	pid  int // the process at addr
	// backends are redlockd's redis-servers, whose CPU is summed (none
	// for a direct server).
	backends []*redisProc
	// servers execute the SETs: they are flushed before each run and
	// their INFO stats counted.
	servers []string
}

// measure runs one redis-benchmark workload against t and reads, before
// and after, the CPU of t's processes and the servers' counters. An
// aborted run comes back with its reason and the error.
func (t target) measure(ctx context.Context, w workload) (sample, error) {
	if err := flushAll(ctx, t.servers); err != nil {
		return sample{}, err
	}
	before, err := t.counters()
	if err != nil {
		return sample{}, err
	}
	run, runErr := redisBenchmark(ctx, t.addr, w)
	after, err := t.counters()
	if err != nil {
		return sample{}, errors.Join(runErr, err)
	}
	s := sample{run: run, requests: w.requests, self: after.self - before.self,
		backends: after.backends - before.backends, at: after.at.minus(before.at)}
	if before.sysOK && after.sysOK {
		s.sys, s.sysOK = after.sys.minus(before.sys), true
	}
	return s, runErr
}

// counters is a reading of everything measure compares.
type counters struct {
	self, backends int64
	at             serverStats
	// sys is the system calls of the process redis-benchmark talks to;
	// sysOK says they could be read.
	sys   syscalls
	sysOK bool
}

func (t target) counters() (counters, error) {
	var c counters
	var err error
	if c.self, err = procTicks(t.pid); err != nil {
		return c, err
	}
	c.sys, c.sysOK = procSyscalls(t.pid)
	for _, b := range t.backends {
		n, err := procTicks(b.pid())
		if err != nil {
			return c, err
		}
		c.backends += n
	}
	for _, a := range t.servers {
		s, err := readStats(a)
		if err != nil {
			return c, err
		}
		c.at = c.at.plus(s)
	}
	return c, nil
}
