package tracking_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestServerNoLoop holds redis-server to what docs/commands.md says its
// NOLOOP leaves out, the reason redlockd tells a NOLOOP client's own
// changes apart by what the backends hold rather than by a backend's own
// NOLOOP on its shared connections: a connection (A) tracks with NOLOOP, its invalidations redirected to a
// subscribed one (B), and another connection (C) writes a marker key
// after each step. Every step and marker run in order, one reply after
// the other, so what B receives before the marker's invalidation is
// what the server reported of the step.
func TestServerNoLoop(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	c := dial(t, srv.Addr())
	// Keys expire only when a command touches them: which connection
	// touched one is then known.
	c.do("DEBUG SET-ACTIVE-EXPIRE 0")
	marks := 0
	// reported runs step on a, then writes a marker that a hears of, and
	// reports whether b was told of key before the marker.
	reported := func(a, b *wire, bcast bool, key string, step func()) bool {
		t.Helper()
		marks++
		mark := "mark" + strconv.Itoa(marks)
		if !bcast {
			a.do("GET " + mark) // default mode: only read keys are reported
		}
		step()
		c.do("SET " + mark + " v")
		got := b.until(bulk(mark))
		return strings.Contains(got, bulk(key))
	}

	t.Run("bcast", func(t *testing.T) {
		a, b := dial(t, srv.Addr()), subscribed(t, srv.Addr())
		a.do("CLIENT TRACKING ON BCAST NOLOOP REDIRECT " + b.id)
		if reported(a, b.wire, true, "own", func() { a.do("SET own 1") }) {
			t.Error("a plain SET of the NOLOOP connection was reported")
		}
		if reported(a, b.wire, true, "own", func() { a.do("MULTI", "SET own 2", "EXEC") }) {
			t.Error("a MULTI … EXEC of the NOLOOP connection was reported")
		}
		if !reported(a, b.wire, true, "own", func() { a.do("EVAL redis.call('set',KEYS[1],'3') 1 own") }) {
			t.Error("a script's write by the NOLOOP connection was left out: docs/commands.md says BCAST reports it")
		}
		if !reported(a, b.wire, true, "own", func() { c.do("SET own 4") }) {
			t.Error("another connection's SET was left out")
		}
	})

	t.Run("default", func(t *testing.T) {
		a, b := dial(t, srv.Addr()), subscribed(t, srv.Addr())
		a.do("CLIENT TRACKING ON NOLOOP REDIRECT " + b.id)
		a.do("GET mine")
		if reported(a, b.wire, false, "mine", func() { a.do("EVAL redis.call('set',KEYS[1],'1') 1 mine") }) {
			t.Error("a script's write by the NOLOOP connection was reported in default mode")
		}
		a.do("GET mine")
		if !reported(a, b.wire, false, "mine", func() { c.do("SET mine 2") }) {
			t.Error("another connection's SET of a read key was left out")
		}
		// An expiry that the connection's own read sets off is left
		// out; one that another connection's read sets off is not.
		for _, own := range []bool{true, false} {
			key := map[bool]string{true: "exp:own", false: "exp:other"}[own]
			c.do("SET " + key + " v PX 20")
			a.do("GET " + key)
			time.Sleep(100 * time.Millisecond) // the server's clock passes the ttl
			toucher := c
			if own {
				toucher = a
			}
			got := reported(a, b.wire, false, key, func() { toucher.do("GET " + key) })
			if want := !own; got != want {
				t.Errorf("an expiry set off by the NOLOOP connection itself (%v): reported %v, want %v", own, got, want)
			}
		}
	})
}

// subWire is a connection subscribed to the channel that redirected
// invalidations reach, with its client id.
type subWire struct {
	*wire
	id string
}

// subscribed dials addr and subscribes to that channel.
func subscribed(t *testing.T, addr string) subWire {
	t.Helper()
	w := dial(t, addr)
	id := strings.TrimSpace(strings.TrimPrefix(w.do("CLIENT ID"), ":"))
	if _, err := w.nc.Write(encode([]string{"SUBSCRIBE", "__redis__:invalidate"})); err != nil {
		t.Fatal(err)
	}
	w.until("__redis__:invalidate\r\n:1\r\n")
	return subWire{w, id}
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
