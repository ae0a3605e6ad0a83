package embedded

import (
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// memNoReply takes a reply and drops it, without allocating.
var memNoReply = quorum.ReceiverFunc(func(quorum.Reply) {})

// BenchmarkMemoryNative is a native lock and release on the in-memory
// node, over a thousand live keys: the string path that scripts must not
// slow down.
func BenchmarkMemoryNative(b *testing.B) {
	m := New("bench")
	defer m.Close()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
		m.Do(time.Time{}, memSetNX(keys[i], "held", time.Hour), memNoReply)
	}
	lock := memSetNX("lock", "tok", time.Minute)
	release := quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "lock", Token: "tok"}
	miss := quorum.Cmd{Kind: quorum.Get, Key: "absent"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Do(time.Time{}, lock, memNoReply)
		m.Do(time.Time{}, miss, memNoReply)
		m.Do(time.Time{}, release, memNoReply)
	}
}

// BenchmarkMemoryEval is a library's release script on the node, each
// awaited: the script runs off the caller's goroutine (see memLine), and
// the lock of the next turn runs inline again.
func BenchmarkMemoryEval(b *testing.B) {
	m := New("bench")
	defer m.Close()
	release := nodetest.EvalCmd(luaRelease, []string{"lock"}, "tok")
	done := make(chan struct{}, 1)
	released := quorum.ReceiverFunc(func(quorum.Reply) { done <- struct{}{} })
	b.ReportAllocs()
	for b.Loop() {
		m.Do(time.Time{}, memSetNX("lock", "tok", time.Minute), memNoReply)
		m.Do(time.Time{}, release, released)
		<-done
	}
}

// TestMemoryNativeCost: a key stays a token and an expiry, and a lock,
// a miss and a release stay within a small, fixed number of allocations:
// each runs through the node's engine as on a Redis node (SET NX PX, the
// Get and the compare-and-delete scripts, on a pooled interpreter).
func TestMemoryNativeCost(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size != unsafe.Sizeof("")+unsafe.Sizeof(time.Time{}) {
		t.Errorf("entry is %d bytes: more than a token and an expiry", size)
	}
	m := New("cost")
	defer m.Close()
	lock := memSetNX("lock", "tok", time.Minute)
	release := quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "lock", Token: "tok"}
	miss := quorum.Cmd{Kind: quorum.Get, Key: "absent"}
	allocs := testing.AllocsPerRun(200, func() {
		m.Do(time.Time{}, lock, memNoReply)
		m.Do(time.Time{}, miss, memNoReply)
		m.Do(time.Time{}, release, memNoReply)
	})
	// About a dozen each: the call, its words (one copy of the command),
	// the run, a script's KEYS and ARGV and its redis.call, the replies.
	// A fresh interpreter per script took hundreds.
	if allocs > 50 {
		t.Errorf("lock, miss and release: %v allocations, want at most 50", allocs)
	}
}

// BenchmarkMemoryEvalMarked is a library's lock script as a writing
// script's round sends it, with a mark, then ForgetEval, each awaited:
// the record that a marked run keeps and drops is part of its cost.
func BenchmarkMemoryEvalMarked(b *testing.B) {
	m := New("bench")
	defer m.Close()
	lock, forget, release := markedRun()
	done := make(chan struct{}, 1)
	ran := quorum.ReceiverFunc(func(quorum.Reply) { done <- struct{}{} })
	b.ReportAllocs()
	for b.Loop() {
		m.Do(time.Time{}, lock, ran)
		<-done
		m.Do(time.Time{}, forget, memNoReply)
		m.Do(time.Time{}, release, memNoReply)
	}
}

// BenchmarkMemoryEvalMarkedInline is BenchmarkMemoryEvalMarked run
// through the node's step directly, without the line's goroutine: the
// engine's own cost of the marked run, its ForgetEval and a release.
func BenchmarkMemoryEvalMarkedInline(b *testing.B) {
	m := New("bench")
	defer m.Close()
	lock, forget, release := markedRun()
	b.ReportAllocs()
	for b.Loop() {
		m.run(time.Time{}, lock)
		m.run(time.Time{}, forget)
		m.run(time.Time{}, release)
	}
}

// markedRun is a library's lock script as a writing script's round sends
// it, with a mark, the ForgetEval that drops its record, and the release
// of what it took.
func markedRun() (lock, forget, release quorum.Cmd) {
	lock = nodetest.EvalCmd(`return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000)`, []string{"lock"}, "tok")
	lock.Mark, lock.TTL, lock.Limit, lock.Max = "redlockd:script:{lock}:m", time.Minute, 30*time.Second, time.Minute
	forget = quorum.Cmd{Kind: quorum.ForgetEval, Keys: lock.Keys, Mark: lock.Mark}
	release = quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "lock", Token: "tok"}
	return lock, forget, release
}
