package commands

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// replyCounter is a Writer that checks the shape of what a command writes:
// it counts complete top-level replies, each aggregate counting once all
// its announced elements were written.
type replyCounter struct {
	replies int
	open    []int // elements each unfinished aggregate still expects
	bad     string
}

func (w *replyCounter) value() {
	for {
		if len(w.open) == 0 {
			w.replies++
			return
		}
		top := len(w.open) - 1
		if w.open[top]--; w.open[top] > 0 {
			return
		}
		w.open = w.open[:top] // the finished aggregate is one element of its parent
	}
}

func (w *replyCounter) aggregate(kind string, n int) {
	switch {
	case n < 0:
		w.bad = fmt.Sprintf("%s of %d elements", kind, n)
	case n == 0:
		w.value()
	default:
		w.open = append(w.open, n)
	}
}

// Status and error texts may carry the client's bytes (an unknown
// command's name); the proxy's Writer turns CR and LF into spaces, as
// Redis does, so they are not checked here.
func (w *replyCounter) WriteSimple(string) { w.value() }
func (w *replyCounter) WriteError(string)  { w.value() }

func (w *replyCounter) WriteBulk([]byte)             { w.value() }
func (w *replyCounter) WriteBulkString(string)       { w.value() }
func (w *replyCounter) WriteInt(int64)               { w.value() }
func (w *replyCounter) WriteNull()                   { w.value() }
func (w *replyCounter) WriteDouble(float64)          { w.value() }
func (w *replyCounter) WriteVerbatim(string, string) { w.value() }
func (w *replyCounter) WriteDoubleText(string)       { w.value() }
func (w *replyCounter) WriteBool(bool)               { w.value() }
func (w *replyCounter) WriteBigNumber(string)        { w.value() }
func (w *replyCounter) WritePush(n int)              { w.WriteArray(n) }
func (w *replyCounter) WriteNullArray()              { w.WriteNull() }
func (w *replyCounter) WriteArray(n int)             { w.aggregate("array", n) }
func (w *replyCounter) WriteMap(n int)               { w.aggregate("map", 2*n) }
func (w *replyCounter) WriteSet(n int)               { w.aggregate("set", n) }

var (
	fuzzOnce    sync.Once
	fuzzHandler *Handler
)

// fuzzTarget is one command table over in-memory nodes, shared by every
// input of a fuzzing run; a short max-ttl keeps what inputs leave behind
// (locks that later inputs wait for) short-lived.
func fuzzTarget() *Handler {
	fuzzOnce.Do(func() {
		nodes := []quorum.Node{embedded.New("f1"), embedded.New("f2"), embedded.New("f3")}
		cfg := quorum.DefaultConfig()
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		cl, err := quorum.New(nodes, cfg)
		if err != nil {
			panic(err)
		}
		fuzzHandler = New(cl, Options{MaxTTL: time.Second, SessionTTL: 300 * time.Millisecond, Logger: cfg.Logger})
	})
	return fuzzHandler
}

// FuzzExec runs one command, its arguments separated by NUL bytes, on a
// fresh session (RESP3 after HELLO 3 when resp3): it must not panic,
// must return (a blocking command is ended by closing the session, as a
// client that leaves does), and must write exactly one complete reply
// (one per channel for the pub/sub commands that Redis answers so).
//
//	go test -run='^$' -fuzz=FuzzExec -fuzztime=60s ./commands/
func FuzzExec(f *testing.F) {
	for _, seed := range []string{
		"PING", "LOCK\x00k\x001000", "LOCK\x00k\x001000\x00WAIT\x0050\x00TOKEN\x00t\x00FENCE",
		"LOCK\x00k\x001000\x00OWNER\x00o\x00KEEPALIVE", "SET\x00k\x00v\x00NX\x00PX\x00100",
		"SET\x00k\x00v\x00NX", "HELLO\x003\x00AUTH\x00default\x00x", "CLIENT\x00INFO",
		"INFO\x00backends", "LOCKINFO\x00k", "EVALSHA\x00e950836ed1e694540c503ef9972b8de518044d3b\x001\x00k\x00t",
		"COMMAND\x00DOCS", "CONFIG\x00GET\x00*", "SCRIPT\x00LOAD\x00return 1", "DEL\x00a\x00b\x00a",
		"RENEW\x00k\x00t\x00-1", "SUBSCRIBE\x00a\x00b\x00a", "PUNSUBSCRIBE", "PUBSUB\x00NUMSUB\x00a", "PEXPIRE\x00k\x009223372036854775807", "",
	} {
		f.Add(false, seed)
		f.Add(true, seed)
	}
	f.Fuzz(func(t *testing.T, resp3 bool, in string) {
		h := fuzzTarget()
		s := h.NewSession("127.0.0.1:1")
		defer h.CloseSession(s)
		if resp3 {
			h.Exec(s, [][]byte{[]byte("HELLO"), []byte("3")}, &replyCounter{})
		}
		var args [][]byte
		if in != "" {
			for _, a := range strings.Split(in, "\x00") {
				args = append(args, []byte(a))
			}
		}
		w := &replyCounter{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.Exec(s, args, w)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			h.CloseSession(s) // the client left: a wait must end
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%q did not return after its session closed", in)
			}
		}
		want := wantReplies(args)
		if w.bad != "" || w.replies != want || len(w.open) != 0 {
			t.Fatalf("%q wrote %d replies (want %d), %d unfinished aggregates %v; %s", in, w.replies, want, len(w.open), w.open, w.bad)
		}
	})
}

// wantReplies is how many replies args get: none for no command, one per
// channel or pattern for an (un)subscription that names several (as
// Redis answers it), one otherwise.
func wantReplies(args [][]byte) int {
	if len(args) == 0 {
		return 0
	}
	switch strings.ToLower(string(args[0])) {
	case "subscribe", "psubscribe", "unsubscribe", "punsubscribe":
		if len(args) > 2 && !reservedTopics(args[1:]) {
			return len(args) - 1
		}
	}
	return 1
}
