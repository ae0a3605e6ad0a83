package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/server"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // could not listen, or the server failed
	exitUsage  = 2 // bad flags, environment, config file or backends
)

const shutdownTimeout = 10 * time.Second

// configured runs once the configuration is known and checked; main sets
// it to pace the processors (procpace), which tests that drive run in
// their own process leave alone.
var configured = func(Config) {}

// run is the whole program: it returns the exit code instead of exiting,
// so that tests can drive it. SIGHUP, while it runs, reloads what can
// change safely (see reload.go).
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, env)
	switch {
	case errors.Is(err, errHelp):
		printUsage(stdout)
		return exitOK
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "redlockd %s\n", version())
		return exitOK
	case err == nil:
		err = checkListen(cfg.Listen)
	}
	if err != nil {
		return usageError(stderr, err)
	}
	configured(cfg)
	// From here on a SIGHUP is never fatal: it waits until the reloader
	// runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ln, err := listenAll(cfg)
	if err != nil {
		return usageError(stderr, err)
	}
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		ln.Close()
		return usageError(stderr, err)
	}
	defer stopProfile()
	level := new(slog.LevelVar)
	log := newLogger(cfg, level, stderr)
	backend.SetGoRedisLogger(log)
	live := newLiveTLS(&cfg)
	rd, err := server.New(ctx, stackConfig(cfg, log))
	if err != nil {
		ln.Close()
		return usageError(stderr, err)
	}
	// After New: a start-up refused for a bad backend ends with its one line.
	for _, w := range append(cfg.warnings(), envWarnings(environ())...) {
		log.Warn(w)
	}
	rl := &reloader{args: args, env: env, running: cfg, level: level, tls: live, handler: rd.Handler(), log: log}
	stopReload := rl.onHangup(hup)
	defer stopReload()
	return serve(ctx, cfg, rd, ln, log)
}

// environ lists the process's environment, for the warnings about
// REDLOCKD_ variables that no setting reads.
var environ = os.Environ

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "redlockd: %v\n", err)
	return exitUsage
}

// listenAll opens --listen, and tries --metrics-addr, before anything
// starts: an address that cannot be listened on is a bad setting (exit 2,
// one line), not a failure found after the backends were dialled.
func listenAll(cfg Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("invalid --listen %q: cannot listen: %v", cfg.Listen, opError(err))
	}
	if cfg.MetricsAddr == "" {
		return ln, nil
	}
	if err := checkAddr("metrics-addr", cfg.MetricsAddr); err != nil {
		ln.Close()
		return nil, err
	}
	// The metrics server listens again when it starts; trying here makes a
	// bad address a bad setting.
	mln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("invalid --metrics-addr %q: cannot listen: %v", cfg.MetricsAddr, opError(err))
	}
	mln.Close()
	return ln, nil
}

// opError drops the repetition of the address from a listen error.
func opError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

func newLogger(cfg Config, level *slog.LevelVar, w io.Writer) *slog.Logger {
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated already
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsText}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationsAsText writes every duration as Go writes it ("10s", "1.5ms"),
// in JSON too, where slog would write a count of nanoseconds.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// stackConfig maps the flags; the stack derives the rest (the quorum's
// and the commands' max-ttl, the quarantine's default) from them.
func stackConfig(cfg Config, log *slog.Logger) server.Config {
	c := server.DefaultConfig()
	c.Backends, c.BackendTLS = cfg.Backends, cfg.backendTLS
	c.NodeTimeout, c.DriftFactor = cfg.NodeTimeout, cfg.DriftFactor
	c.MaxTTL, c.RestartQuarantine = cfg.MaxTTL, cfg.RestartQuarantine
	c.MaxWait, c.SessionTTL = cfg.MaxWait, cfg.SessionTTL
	c.Password, c.Version, c.MetricsAddr, c.Logger = cfg.RequirePass, version(), cfg.MetricsAddr, log
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

// serve serves clients on ln (--listen) until ctx ends, then shuts down
// gracefully.
func serve(ctx context.Context, cfg Config, rd *server.Redlockd, ln net.Listener, log *slog.Logger) int {
	if cfg.RequirePass == "" && exposed(ln.Addr()) {
		log.Warn("listening on a non-loopback address without --requirepass: anyone who reaches it can take and break locks", "addr", ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- rd.Serve(ln) }()
	select {
	case <-rd.Ready():
		log.Info("ready to accept connections", "addr", ln.Addr().String(), "tls", cfg.clientTLS != nil,
			"backends", len(rd.Nodes()), "quorum", rd.Cluster().Quorum(), "version", version())
	case err := <-served:
		rd.Close()
		log.Error("cannot serve", "err", err)
		return exitFailed
	}
	return waitAndShutdown(ctx, rd, served, log)
}

func waitAndShutdown(ctx context.Context, rd *server.Redlockd, served <-chan error, log *slog.Logger) int {
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
