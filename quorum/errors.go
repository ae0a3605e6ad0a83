package quorum

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/redlockd/redlockd/internal/oneline"
)

var (
	// ErrNotAcquired reports contention: enough nodes answered, but fewer
	// than a majority granted the lock (held elsewhere, or a split vote), or
	// the validity ran out before the majority was reached.
	ErrNotAcquired = errors.New("quorum: lock not acquired")
	// ErrNotHeld reports that the token does not hold the lock on a majority.
	ErrNotHeld = errors.New("quorum: lock not held")
	// ErrNoQuorum is matched (errors.Is) by every *NoQuorumError.
	ErrNoQuorum = errors.New("quorum: too few nodes answered")
	// ErrInvalidTTL reports a ttl that is not positive.
	ErrInvalidTTL = errors.New("quorum: ttl must be positive")
)

// NodeError is one node's failure within a quorum operation.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// ReplyError is a node's error that is its server's own error reply
// (-OOM …, -READONLY …, -NOSCRIPT …) rather than a failure to reach it.
// Nodes return errors that implement it, so that metrics and logs can
// classify what a server said without knowing the node's type.
type ReplyError interface {
	error
	// ReplyCode is the reply's first word ("OOM", "READONLY", "ERR").
	ReplyCode() string
}

// ReplyCode is the code of the server error reply in err's chain, if any.
func ReplyCode(err error) (code string, ok bool) {
	var re ReplyError
	if errors.As(err, &re) {
		return re.ReplyCode(), true
	}
	return "", false
}

// keyReplyCodes are the codes of the error replies that speak of a
// command's key rather than of the server's state: the key holds another
// type of value (a hash that a client's script wrote, say), as GET says
// of it on Redis. Any other error reply (OOM, READONLY, LOADING, BUSY, or
// one not listed) is a failure to answer, as a timeout is.
var keyReplyCodes = map[string]bool{"WRONGTYPE": true}

// KeyReplyCode reports whether an error reply of this code is about the
// command's key: the node answered (see Reply.ErrReply).
func KeyReplyCode(code string) bool { return keyReplyCodes[code] }

// KeyReplies reports whether a node's error reply to a command of kind k
// may be about a client's key, and so be its answer (Reply.ErrReply): not
// for a client's script (whose errors are its reply, a Value) nor its
// undo, nor the server-wide and pub/sub kinds.
func KeyReplies(k CmdKind) bool { return !k.has(factNotAboutKeys) }

// keyReply is the text of the error reply about the key that err, a
// node's error to a command of kind k, carries (see KeyReplies); "" for
// any other error.
func keyReply(k CmdKind, err error) string {
	if !KeyReplies(k) {
		return ""
	}
	var re ReplyError
	if errors.As(err, &re) && keyReplyCodes[re.ReplyCode()] {
		return re.Error()
	}
	return ""
}

// NoQuorumError reports that fewer than a majority of nodes answered at all,
// so the outcome cannot be decided. Errs holds one *NodeError per failed node.
type NoQuorumError struct {
	Answered int
	Total    int
	Errs     *multierror.Error
}

func (e *NoQuorumError) Error() string {
	return fmt.Sprintf("%d of %d backends answered: %s", e.Answered, e.Total, e.Reasons())
}

// Reasons is a short one-line summary of each failed node's error.
func (e *NoQuorumError) Reasons() string {
	if e.Errs == nil {
		return ""
	}
	parts := make([]string, 0, len(e.Errs.Errors))
	for _, err := range e.Errs.Errors {
		parts = append(parts, oneline.Of(err.Error()))
	}
	return strings.Join(parts, "; ")
}

func (e *NoQuorumError) Is(target error) bool { return target == ErrNoQuorum }
func (e *NoQuorumError) Unwrap() error {
	if e.Errs == nil {
		return nil
	}
	return e.Errs.ErrorOrNil()
}
