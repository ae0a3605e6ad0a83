package server

import (
	"context"
	"log/slog"
	"sync"
)

// logGate holds what the cluster logs while New checks the backends, so
// that a start-up refused for a bad backend ends with its one error
// rather than the cluster's own lines about the same backend; once the
// check passes, open passes the held lines on, in order, and every later
// one at once.
type logGate struct {
	mu     sync.Mutex
	opened bool
	held   []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

// logger is a logger writing to next through the gate.
func (g *logGate) logger(next *slog.Logger) *slog.Logger {
	return slog.New(gateHandler{g: g, next: next.Handler()})
}

// open passes the held records on; the gate lets everything through from
// then on.
func (g *logGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock() // held across the replay: a new record waits its turn
	for _, h := range g.held {
		_ = h.h.Handle(context.Background(), h.r)
	}
	g.held, g.opened = nil, true
}

type gateHandler struct {
	g    *logGate
	next slog.Handler
}

func (h gateHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h gateHandler) Handle(ctx context.Context, r slog.Record) error {
	h.g.mu.Lock()
	if !h.g.opened {
		h.g.held = append(h.g.held, heldRecord{h.next, r.Clone()})
		h.g.mu.Unlock()
		return nil
	}
	h.g.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h gateHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return gateHandler{g: h.g, next: h.next.WithAttrs(as)}
}

func (h gateHandler) WithGroup(name string) slog.Handler {
	return gateHandler{g: h.g, next: h.next.WithGroup(name)}
}
