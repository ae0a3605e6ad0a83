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
	b := tokenEntropy()
	return hex.EncodeToString(b[:])
}

// AppendToken appends a fresh token, as NewToken makes, to dst.
func AppendToken(dst []byte) []byte {
	b := tokenEntropy()
	return hex.AppendEncode(dst, b[:])
}

// tokenEntropy is one token's random bytes, never handed out twice.
func tokenEntropy() (b [tokenBytes]byte) {
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
	return b
}

// tokenCmds are the commands that reach a lock from its token alone (a
// RENEW, an UNLOCK, the keeper, the retries of releases): the kind of lock
// is in the token's form (an owner's, a permit's, a reader's, or a plain
// lock's). restore stores the lock again on a node that lost it: a permit
// takes its slot again where it is free, as a permit round would (the
// marker with it), and a reader comes back as a reader, where no writer
// holds the key.
type tokenCmds struct{ extend, release, restore CmdKind }

// cmdsOf is the commands of token's kind of lock.
func cmdsOf(token string) tokenCmds {
	switch {
	case IsOwnerToken(token):
		return tokenCmds{ExtendHeld, CompareAndDelete, RestoreHeld}
	case IsPermitToken(token):
		return tokenCmds{ExtendPermit, ReleasePermit, AcquirePermit}
	case IsSharedToken(token):
		return tokenCmds{ExtendShared, ReleaseShared, AcquireShared}
	}
	return tokenCmds{CompareAndExtend, CompareAndDelete, RestoreHeld}
}
