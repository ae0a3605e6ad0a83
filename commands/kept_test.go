package commands

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/raceflag"
)

// TestKeptStringsStayWhatTheyWere: strings cut from a connection's chunks
// keep their bytes while later requests fill the chunk and the next ones,
// whatever the arguments' buffers become; a pair too long for a chunk
// gets strings of its own; a fresh token is a 32-digit hex string, a new
// one each time.
func TestKeptStringsStayWhatTheyWere(t *testing.T) {
	var k keptStrings
	type pair struct{ key, token, wantKey, wantToken string }
	var got []pair
	arg := make([]byte, 0, 64)
	for i := range 500 { // several chunks' worth
		key := fmt.Sprintf("key:%d", i)
		token := strings.Repeat("t", i%40)
		arg = append(arg[:0], key...)
		a := append([]byte(nil), token...)
		k1, t1 := k.pair(arg, a)
		clear(arg[:cap(arg)]) // the request's buffer is reused
		clear(a)
		got = append(got, pair{k1, t1, key, token})
	}
	long := strings.Repeat("k", keptChunk)
	lk, lt := k.pair([]byte(long), []byte("tok"))
	got = append(got, pair{lk, lt, long, "tok"})
	tokens := map[string]bool{}
	for range 100 {
		kk, tok := k.withToken([]byte("lock"))
		got = append(got, pair{kk, tok, "lock", tok})
		if len(tok) != 32 || strings.Trim(tok, "0123456789abcdef") != "" || tokens[tok] {
			t.Fatalf("fresh token %q: want 32 hex digits, never seen before", tok)
		}
		tokens[tok] = true
	}
	for i, p := range got {
		if p.key != p.wantKey || p.token != p.wantToken {
			t.Fatalf("pair %d reads %q %q, was %q %q", i, p.key, p.token, p.wantKey, p.wantToken)
		}
	}
	if e, f := k.pair(nil, nil); e != "" || f != "" {
		t.Fatalf("empty pair: %q %q", e, f)
	}
}

// TestKeptStringsFromManyGoroutines: a connection's commands that run on
// workers at once cut their strings from the one chunk without sharing
// bytes (the race detector watches the chunk).
func TestKeptStringsFromManyGoroutines(t *testing.T) {
	var k keptStrings
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key, token := fmt.Sprintf("k%d:%d", g, i), fmt.Sprintf("t%d:%d", g, i)
				a, b := k.pair([]byte(key), []byte(token))
				if a != key || b != token {
					errs <- fmt.Sprintf("%q %q, want %q %q", a, b, key, token)
					return
				}
				defer func() {
					if a != key || b != token {
						errs <- fmt.Sprintf("later %q %q, want %q %q", a, b, key, token)
					}
				}()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestKeepaliveKeepsNoChunk: a started LOCK … KEEPALIVE is granted with
// its key and token cut from the connection's chunk, and its binding,
// which lives as long as the lock, holds copies of its own; the chunk
// is the one later requests go on filling.
func TestKeepaliveKeepsNoChunk(t *testing.T) {
	h, s := embeddedSession(t)
	var r recorder
	if !startWait(t, h, s, []string{"LOCK", "kept", "10000", "TOKEN", "tok", "KEEPALIVE"}, &r, make(chan struct{})) {
		t.Fatal("LOCK … KEEPALIVE has no asynchronous form")
	}
	if !strings.HasPrefix(r.String(), "[$tok ") {
		t.Fatalf("LOCK … KEEPALIVE: %s, want a grant of tok", r.String())
	}
	chunk := s.kept.buf[:cap(s.kept.buf)]
	in := func(str string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(str)))
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(chunk)))
		return p >= lo && p < lo+uintptr(len(chunk))
	}
	if !strings.Contains(string(chunk[:len(s.kept.buf)]), "kepttok") {
		t.Fatalf("the connection's chunk %q does not hold the request's key and token", chunk[:len(s.kept.buf)])
	}
	h.bound.mu.Lock()
	defer h.bound.mu.Unlock()
	n := 0
	for ref, b := range h.bound.byRef {
		n++
		if ref.key != "kept" || ref.token != "tok" {
			t.Fatalf("binding of %q %q, want kept tok", ref.key, ref.token)
		}
		if in(ref.key) || in(ref.token) || in(b.ref.key) || in(b.ref.token) {
			t.Fatal("the binding's key or token shares the connection's chunk")
		}
	}
	if n != 1 {
		t.Fatalf("%d bindings, want 1", n)
	}
}

// A pair and a fresh token cost no allocation of their own: only the
// chunks they fill, one per many requests.
func TestKeptStringsAllocateNothingOfTheirOwn(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	var k keptStrings
	key, token := []byte("lock:12345"), []byte("token:67890")
	// Every allocation counted, not their average per call rounded down
	// (testing.AllocsPerRun): the chunks the calls fill, and nothing else.
	const runs = 2000
	for _, tc := range []struct {
		name string
		size int // bytes one call keeps
		call func()
	}{
		{"pair", len(key) + len(token), func() { k.pair(key, token) }},
		{"withToken", len(key) + len(quorum.AppendToken(nil)), func() { k.withToken(key) }},
	} {
		chunks := uint64(runs*tc.size/keptChunk + 2)
		if n := mallocs(runs, tc.call); n > chunks {
			t.Errorf("%d calls of %s allocated %d times; the chunks they fill are %d", runs, tc.name, n, chunks)
		}
	}
}

// mallocs is how many allocations runs calls of f made, all of them.
func mallocs(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
