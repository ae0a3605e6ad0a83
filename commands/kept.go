package commands

import (
	"sync"
	"unsafe"

	"github.com/redlockd/redlockd/quorum"
)

// keptChunk is the size of one chunk of a connection's keptStrings; a
// pair of arguments longer than a quarter of it gets a string of its own.
const keptChunk = 1024

// keptStrings is where a connection's lock commands copy the key and
// token that their rounds keep past the request (the backends' commands,
// the late replies' undo, the retries of releases): many requests'
// strings share one chunk, so that a request allocates none of its own.
//
// A chunk is only ever appended to, never written over, so a string cut
// from it stays what it was for as long as anything holds it; the
// garbage collector frees a chunk once no string of it is held. What
// keeps a lock's strings for the lock's whole life (a KEEPALIVE binding,
// a release left to retry) copies them out, so that a long-held lock does
// not keep a whole chunk alive.
type keptStrings struct {
	mu  sync.Mutex // a connection's commands may run on several goroutines
	buf []byte     // the current chunk: its free room is buf[len(buf):cap(buf)]
}

// pair is a and b as strings, copied together.
func (k *keptStrings) pair(a, b []byte) (string, string) {
	n := len(a) + len(b)
	if n > keptChunk/4 {
		s := string(a) + string(b)
		return s[:len(a)], s[len(a):]
	}
	k.mu.Lock()
	p := k.room(n)
	p = append(append(p, a...), b...)
	k.mu.Unlock()
	return cut(p[:len(a)]), cut(p[len(a):])
}

// withToken is a as a string, and a fresh token (quorum.NewToken's kind),
// copied together as pair copies them.
func (k *keptStrings) withToken(a []byte) (string, string) {
	var tok [64]byte
	return k.pair(a, quorum.AppendToken(tok[:0]))
}

// room is the next n free bytes of the chunk, as an empty slice of
// capacity n: a new chunk where the current one has less left. The
// caller appends to it and takes what it appended; appending more would
// move to memory of its own, never into the next caller's room. Under
// k.mu.
func (k *keptStrings) room(n int) []byte {
	if cap(k.buf)-len(k.buf) < n {
		k.buf = make([]byte, 0, keptChunk)
	}
	at := len(k.buf)
	k.buf = k.buf[:at+n]
	return k.buf[at : at : at+n]
}

// cut is b as a string that shares its bytes: b is never written again.
func cut(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
