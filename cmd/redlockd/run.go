package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/internal/stack"
	"github.com/redlockd/redlockd/proxy"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // could not listen, or the server failed
	exitUsage  = 2 // bad flags, environment, config file or backends
)

const shutdownTimeout = 10 * time.Second

// run is the whole program: it returns the exit code instead of exiting,
// so that tests can drive it.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, env)
	switch {
	case errors.Is(err, errHelp):
		printUsage(stdout)
		return exitOK
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "redlockd %s\n", Version)
		return exitOK
	case err == nil:
		err = checkListen(cfg.Listen)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	defer stopProfile()
	log := newLogger(cfg, stderr)
	backend.SetGoRedisLogger(log)
	rd, err := stack.New(ctx, stackConfig(cfg, log))
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	return serve(ctx, cfg, rd, log)
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated already
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// stackConfig maps the flags; the stack derives the rest (the quorum's
// and the commands' max-ttl, the quarantine's default) from them.
func stackConfig(cfg Config, log *slog.Logger) stack.Config {
	c := stack.DefaultConfig()
	c.Backends, c.BackendTLS = cfg.Backends, cfg.backendTLS
	c.NodeTimeout, c.DriftFactor = cfg.NodeTimeout, cfg.DriftFactor
	c.MaxTTL, c.RestartQuarantine = cfg.MaxTTL, cfg.RestartQuarantine
	c.MaxWait, c.SessionTTL = cfg.MaxWait, cfg.SessionTTL
	c.Password, c.Version, c.MetricsAddr, c.Logger = cfg.RequirePass, Version, cfg.MetricsAddr, log
	c.RetryDelay = cfg.RetryDelay
	// 0 means "no limit" here as on the flags.
	c.Proxy = proxy.Options{
		Logger: log, TLSConfig: cfg.clientTLS, MaxClients: cfg.MaxClients,
		MaxRequestBytes: cfg.MaxRequestSize, IdleTimeout: cfg.IdleTimeout,
		MaxReplyBytes: cfg.ClientOutputLimit, WriteTimeout: cfg.ClientWriteTimeout,
		MaxPubSubBytes: cfg.PubSubOutputLimit,
	}
	return c
}

// serve serves clients on --listen until ctx ends, then shuts down
// gracefully.
func serve(ctx context.Context, cfg Config, rd *stack.Redlockd, log *slog.Logger) int {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		rd.Close()
		log.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return exitFailed
	}
	if cfg.RequirePass == "" && exposed(ln.Addr()) {
		log.Warn("listening on a non-loopback address without --requirepass: anyone who reaches it can take and break locks", "addr", ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- rd.Serve(ln) }()
	select {
	case <-rd.Ready():
		log.Info("ready to accept connections", "addr", ln.Addr().String(), "tls", cfg.clientTLS != nil,
			"backends", len(rd.Nodes()), "quorum", rd.Cluster().Quorum(), "version", Version)
	case err := <-served:
		rd.Close()
		log.Error("cannot serve", "err", err)
		return exitFailed
	}
	return waitAndShutdown(ctx, rd, served, log)
}

func waitAndShutdown(ctx context.Context, rd *stack.Redlockd, served <-chan error, log *slog.Logger) int {
	select {
	case err := <-served:
		rd.Close()
		log.Error("server stopped", "err", err)
		return exitFailed
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight commands", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := rd.Shutdown(sctx); err != nil {
		log.Warn("in-flight commands did not finish in time; connections closed", "err", err)
	}
	<-served
	log.Info("bye")
	return exitOK
}
