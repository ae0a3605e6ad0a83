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
