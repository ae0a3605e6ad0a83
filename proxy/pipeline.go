package proxy

import (
	"bytes"
	"crypto/sha1"
	"sync"
	"time"

	"github.com/redlockd/redlockd/commands"
)

// maxConcurrent bounds how many commands of one connection's batch run at
// once, and so the goroutines and reply buffers one client can hold.
const maxConcurrent = 64

// maxPipelined bounds the pipelined commands that run at once across all
// connections. Beyond it, commands wait before their quorum round starts
// rather than inside it: a pipeline of 16 from 50 clients would otherwise
// put 800 rounds in flight, and the queueing among them alone can eat the
// 50 ms node timeout. The figure is several times what keeps the backends
// busy (throughput × round trip).
const maxPipelined = 128

// pipelineSlots is shared by every Server of the process; there is one in
// practice.
var pipelineSlots = newSlots(maxPipelined)

// execLimited runs one pipelined command that holds a slot of the
// in-flight limit (taken for its whole run by runConcurrent), and gives
// the slot back once it is done.
func (s *Server) execLimited(st *connState, r commands.Request, w *Writer, limited bool) {
	s.h.Run(st.sess, r, w)
	if limited {
		pipelineSlots.release(1)
	}
}

// start starts a command of a concurrent run in its asynchronous form,
// where it has one (commands.Handler.Start): no worker runs it, and its
// round's last reply answers it, gives its slot back (when limited: one
// that may block holds none) and counts it done in st.wg. It reports
// false when the command must run on a worker.
func (s *Server) start(st *connState, r commands.Request, w *Writer, limited bool) bool {
	if st.startedDone == nil {
		st.startedDone = func() {
			pipelineSlots.release(1)
			st.wg.Done()
		}
		st.startedUnlimited = st.wg.Done
	}
	done := st.startedDone
	if !limited {
		done = st.startedUnlimited
	}
	return s.h.Start(st.sess, r, w, done)
}

// writerPool recycles the reply buffers of concurrently run commands.
var writerPool = sync.Pool{New: func() any { return &Writer{} }}

// runBatch runs a read batch in order. Runs of commands that neither touch
// session state nor share a key run concurrently, so a pipeline of 16
// locks costs about one quorum round trip rather than 16; each renders
// into its own buffer and the buffers are appended in order, so replies
// keep the order of the commands. Barriers (connection commands) run
// alone. It reports whether the client quit.
func (s *Server) runBatch(st *connState, reqs []commands.Request) bool {
	for i := 0; i < len(reqs); {
		j := segmentEnd(st, reqs, i)
		if st.blocking && !st.sess.InTransaction() && anyMayBlock(reqs[i:j]) {
			s.runStepwise(st, reqs[i:j])
		} else if j == i+1 {
			if s.run(st, reqs[i]) {
				return true
			}
		} else {
			s.runConcurrent(st, reqs[i:j])
		}
		i = j
	}
	return false
}

// segmentEnd returns the end of the longest run from i that may run at
// once: a barrier alone, else commands up to the next barrier or the next
// key already used in the run.
func segmentEnd(st *connState, reqs []commands.Request, i int) int {
	if i+1 == len(reqs) || st.sess.InTransaction() || st.sess.CachingPending() {
		// Between MULTI and EXEC every command is queued, in order; a
		// CLIENT CACHING word is the next command's alone.
		return i + 1
	}
	keys, ok := reqs[i].Keys()
	if !ok {
		return i + 1
	}
	seen := append(st.seen[:0], keys...)
	loaded := noteLoad(reqs[i], nil)
	j := i + 1
	for ; j < len(reqs) && j-i < maxConcurrent; j++ {
		keys, ok := reqs[j].Keys()
		if !ok || anyShared(seen, keys) || needsLoaded(reqs[j], loaded) {
			break
		}
		seen = append(seen, keys...)
		loaded = noteLoad(reqs[j], loaded)
	}
	clear(seen)
	st.seen = seen[:0]
	return j
}

// loadedScript is a body that an EVAL of the run caches, and its SHA1
// once an EVALSHA of the run asked (summed): most runs never do, and the
// body is hashed only then.
type loadedScript struct {
	body   []byte
	sum    [sha1.Size]byte
	summed bool
}

// noteLoad adds to loaded the body of the script that r (an EVAL) caches.
func noteLoad(r commands.Request, loaded []loadedScript) []loadedScript {
	if body := r.ScriptBody(); body != nil {
		return append(loaded, loadedScript{body: body})
	}
	return loaded
}

// needsLoaded reports whether r is an EVALSHA of a body that an EVAL of
// the run caches: it must run after it, as Redis would run it. Each body
// is hashed once at most.
func needsLoaded(r commands.Request, loaded []loadedScript) bool {
	if len(loaded) == 0 {
		return false
	}
	name := r.ScriptName()
	if name == nil {
		return false
	}
	for i := range loaded {
		l := &loaded[i]
		if !l.summed {
			l.sum, l.summed = sha1.Sum(l.body), true
		}
		if commands.ScriptNames(name, &l.sum) {
			return true
		}
	}
	return false
}

// anyShared is a linear scan: runs are at most maxConcurrent commands of a
// key or two each, where a map would cost more than it saves.
func anyShared(seen, keys [][]byte) bool {
	for _, k := range keys {
		for _, s := range seen {
			if bytes.Equal(k, s) {
				return true
			}
		}
	}
	return false
}

// runConcurrent runs cmds at once. The first writes straight into the
// connection's buffer (it is next in order anyway), the others into pooled
// buffers that are appended after it, in order. None of them is a barrier,
// so none can change the protocol the buffers encode in.
//
// Commands that may block for long (LOCK … WAIT) run outside the in-flight
// limit, so that waiters can never hold back the UNLOCK they wait for; the
// others take their slots together, in one step, before any of them starts.
func (s *Server) runConcurrent(st *connState, reqs []commands.Request) {
	ws := append(st.ws[:0], make([]*Writer, len(reqs))...)
	limited := st.limited[:0]
	n := 0
	for _, r := range reqs {
		l := !r.MayBlock()
		limited = append(limited, l)
		if l {
			n++
		}
	}
	st.limited = limited
	pipelineSlots.acquire(n)
	wg := &st.wg
	// The rounds started here reach each backend in one write.
	s.h.HoldWrites()
	for k := 1; k < len(reqs); k++ {
		w := st.runWriter()
		ws[k] = w
		wg.Add(1)
		if !s.start(st, reqs[k], w, limited[k]) {
			s.goExec(pipeTask{st: st, r: reqs[k], w: w, wg: wg, limited: limited[k]})
		}
	}
	wg.Add(1)
	started := s.start(st, reqs[0], st.w, limited[0])
	s.h.ReleaseWrites()
	if !started {
		wg.Done()
		s.execLimited(st, reqs[0], st.w, limited[0])
	}
	wg.Wait()
	for _, w := range ws[1:] {
		st.w.buf = append(st.w.buf, w.buf...)
		putWriter(w)
	}
	clear(ws)
	st.ws = ws[:0]
}

// runStepwise runs a run of commands of which one or more may block (LOCK
// … WAIT) all at once, as runConcurrent does, but writes each reply as
// soon as it and every reply before it are ready rather than all of them
// once the last is, as Redis writes the replies of the commands before
// one that blocks. What earlier runs of the batch left is written first.
// Messages (outbox) go out meanwhile only while no reply is owed: not
// while a command that does not block is in flight (a read's reply may
// carry what a message invalidates), nor while a finished command's reply
// waits behind one that still waits; so a message never reaches the
// client before the reply of a command that finished before it, and the
// messages of a long wait are not held for its length.
func (s *Server) runStepwise(st *connState, reqs []commands.Request) {
	st.writeOut()
	n := len(reqs)
	ws := make([]*Writer, n)
	ready := make(chan int, n)
	unblocking := 0
	for _, r := range reqs {
		if !r.MayBlock() {
			unblocking++
		}
	}
	pipelineSlots.acquire(unblocking)
	// Those that do not block are owed from now, the others once they
	// have finished (done).
	st.out.owe(unblocking)
	st.out.hold(false)
	s.h.HoldWrites()
	for k, r := range reqs {
		w := st.runWriter()
		ws[k] = w
		limited := !r.MayBlock()
		done := func() {
			if limited {
				pipelineSlots.release(1)
			} else {
				st.out.owe(1)
			}
			ready <- k
		}
		if !s.h.Start(st.sess, r, w, done) {
			s.goExec(pipeTask{st: st, r: r, w: w, done: done})
		}
	}
	s.h.ReleaseWrites()
	finished := make([]bool, n)
	for next := 0; next < n; {
		finished[<-ready] = true
		m := 0
		for ; next < n && finished[next]; next++ {
			st.w.buf = append(st.w.buf, ws[next].buf...)
			putWriter(ws[next])
			m++
		}
		if m > 0 {
			st.writeOut()
			st.out.paid(m)
		}
	}
	// The rest of the batch writes its replies at its end, as any batch.
	st.out.hold(true)
}

// runWriter is a pooled reply buffer for one command of a run, in the
// connection's protocol; putWriter gives it back.
func (st *connState) runWriter() *Writer {
	w := writerPool.Get().(*Writer)
	w.proto = st.w.proto
	return w
}

// putWriter gives a reply buffer of a run back to the pool, unless it grew
// large.
func putWriter(w *Writer) {
	if cap(w.buf) <= maxKeptBuffer {
		w.Reset()
		w.proto = nil
		writerPool.Put(w)
	}
}

// pipeTask is one command of a concurrent run; done, when set, ends it
// instead of wg (runStepwise).
type pipeTask struct {
	st      *connState
	r       commands.Request
	w       *Writer
	wg      *sync.WaitGroup
	done    func()
	limited bool // holds a slot of the in-flight limit
}

// maxIdleWorkers bounds the workers kept waiting for pipelined commands;
// workerIdle is how often the idle ones are ended once no command was
// handed to a worker for that long.
const (
	maxIdleWorkers = maxPipelined
	workerIdle     = 500 * time.Millisecond
)

// goExec runs t on an idle worker, or on a new one when none is idle.
func (s *Server) goExec(t pipeTask) {
	s.tasks.Add(1)
	select {
	case s.work <- t:
		s.handoffs.Add(1)
	default:
		go s.worker(t)
	}
}

// worker runs pipelined commands. It waits for the next one (while fewer
// than maxIdleWorkers wait): under load a command then runs on a goroutine
// whose stack has already grown to what a command needs, instead of a new
// goroutine that grows (copies) its stack every time. It waits on the work
// channel alone, with no timer to reset per command: reapWorkers ends the
// idle workers once the load stops, and Serve closes the channel at its
// end. A zero task asks a worker to end.
func (s *Server) worker(t pipeTask) {
	for {
		s.execLimited(t.st, t.r, t.w, t.limited)
		if t.done != nil {
			t.done()
		} else {
			t.wg.Done()
		}
		t = pipeTask{} // hold nothing of a finished batch while idle
		if s.idle.Add(1) > maxIdleWorkers {
			s.idle.Add(-1)
			return
		}
		var ok bool
		t, ok = <-s.work
		s.idle.Add(-1)
		if !ok || (t.wg == nil && t.done == nil) {
			return
		}
	}
}

// reapWorkers ends the idle workers every workerIdle during which no
// command was handed to one, until stop is closed.
func (s *Server) reapWorkers(stop <-chan struct{}) {
	tick := time.NewTicker(workerIdle)
	defer tick.Stop()
	last := s.handoffs.Load()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if n := s.handoffs.Load(); n != last {
			last = n
			continue
		}
		for range s.idle.Load() {
			select {
			case s.work <- pipeTask{}:
			default:
			}
		}
	}
}

// slots is the in-flight limit: a counting semaphore of which a concurrent
// run takes all it needs in one step, and whose waiters are served in
// order, so that a run that needs many is not passed over for ever by runs
// that need few.
type slots struct {
	mu      sync.Mutex
	size    int
	free    int
	waiters []slotWaiter
}

type slotWaiter struct {
	n     int
	ready chan struct{}
}

func newSlots(n int) *slots { return &slots{size: n, free: n} }

// acquire takes n slots, waiting until they are free; n is at most the
// size (a run is at most maxConcurrent commands).
func (s *slots) acquire(n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	if len(s.waiters) == 0 && s.free >= n {
		s.free -= n
		s.mu.Unlock()
		return
	}
	w := slotWaiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	<-w.ready
}

// release gives n slots back and wakes the waiters they are enough for.
func (s *slots) release(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += n
	for len(s.waiters) > 0 && s.free >= s.waiters[0].n {
		w := s.waiters[0]
		s.waiters[0] = slotWaiter{}
		s.waiters = s.waiters[1:]
		s.free -= w.n
		close(w.ready)
	}
}

// held is the number of slots taken.
func (s *slots) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size - s.free
}
