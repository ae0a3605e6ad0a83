package quorum

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// tokenBytes is the entropy of one token: 128 bits.
const tokenBytes = 16

// tokenPool hands out crypto/rand bytes from a refilled buffer, so that a
// lock costs no getrandom call of its own.
var tokenPool struct {
	sync.Mutex
	buf [tokenBytes * 256]byte
	off int
}

func init() { tokenPool.off = len(tokenPool.buf) }

// NewToken returns a fresh random token of 128 bits, hex-encoded.
func NewToken() string {
	var b [tokenBytes]byte
	tokenPool.Lock()
	if tokenPool.off == len(tokenPool.buf) {
		if _, err := rand.Read(tokenPool.buf[:]); err != nil {
			panic("quorum: crypto/rand failed: " + err.Error())
		}
		tokenPool.off = 0
	}
	copy(b[:], tokenPool.buf[tokenPool.off:])
	clear(tokenPool.buf[tokenPool.off : tokenPool.off+tokenBytes])
	tokenPool.off += tokenBytes
	tokenPool.Unlock()
	return hex.EncodeToString(b[:])
}
