package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
)

// The child process runs in serve mode when envServe names its backends.
const (
	envServe       = "REDLOCKD_BENCH_BACKENDS"
	envProfile     = "REDLOCKD_BENCH_CPUPROFILE"
	envNodeTimeout = "REDLOCKD_BENCH_NODE_TIMEOUT"
	// maxClients is cmd/redlockd's default, so the memory run measures a
	// proxy that admits exactly the documented 10,000 clients.
	maxClients = 10000
)

// serveChild runs redlockd over the backends in envServe with the
// defaults of cmd/redlockd, prints "listening <addr>", and serves until its
// stdin closes.
func serveChild() error {
	if path := os.Getenv(envProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var nodes []quorum.Node
	var err error
	for _, addr := range strings.Split(os.Getenv(envServe), ",") {
		n, err := backend.NewRedis(addr, backend.RedisOptions{})
		if err != nil {
			return err
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	cfg := quorum.DefaultConfig()
	if cfg.NodeTimeout, err = time.ParseDuration(os.Getenv(envNodeTimeout)); err != nil {
		return err
	}
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := proxy.New(commands.New(cluster, commands.Options{Logger: log}), proxy.Options{Logger: log, MaxClients: maxClients})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-srv.Ready()
	fmt.Printf("listening %s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	<-served
	return nil
}
