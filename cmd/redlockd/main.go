// Command redlockd is a Redis-protocol lock server that runs the Redlock
// algorithm over independent Redis masters (or, with no --backends, over
// three in-process nodes for trying it out).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/internal/gcpace"
	"github.com/redlockd/redlockd/internal/procpace"
)

func main() {
	backend.RouteGoRedisLogs()
	gcpace.Start()
	configured = func(cfg Config) {
		// Embedded nodes run in this process: their scripts are CPU work
		// that processors of their own share, not waits on a socket.
		if len(cfg.Backends) > 0 {
			procpace.Start()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the default handling comes back, so a
		// second Ctrl-C kills a shutdown that takes too long.
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
