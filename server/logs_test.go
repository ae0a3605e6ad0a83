package server

import (
	"log/slog"
	"strings"
	"testing"
)

// TestLogGateHoldsUntilOpen: what is logged through the gate before open
// is written at open, in order and with its attributes; later lines at
// once. A gate never opened writes nothing.
func TestLogGateHoldsUntilOpen(t *testing.T) {
	var b strings.Builder
	next := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	var g logGate
	log := g.logger(next)
	log.Warn("one", "backend", "a")
	log.With("part", "quorum").Error("two")
	if b.Len() != 0 {
		t.Fatalf("written before open: %q", b.String())
	}
	g.open()
	log.Info("three")
	want := "level=WARN msg=one backend=a\nlevel=ERROR msg=two part=quorum\nlevel=INFO msg=three\n"
	if b.String() != want {
		t.Fatalf("after open: %q, want %q", b.String(), want)
	}
	var shut logGate
	shut.logger(next).Error("dropped")
	if strings.Contains(b.String(), "dropped") {
		t.Fatalf("a gate never opened wrote %q", b.String())
	}
}
