package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlockd/redlockd/quorum"
)

// Redis's own error texts, so that clients and tools recognise them.
const (
	msgSyntax       = "ERR syntax error"
	msgNotInt       = "ERR value is not an integer or out of range"
	msgNoAuth       = "NOAUTH Authentication required."
	msgWrongPass    = "WRONGPASS invalid username-password pair or user is disabled."
	msgNoPassword   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	msgNoScript     = "NOSCRIPT No matching script. Please use EVAL."
	msgNoProto      = "NOPROTO unsupported protocol version"
	msgDBIndex      = "ERR DB index is out of range"
	msgTTLTooLarge  = quorum.MsgTTLExceedsMax
	msgWaitTooLarge = "ERR wait exceeds max-wait"
	msgNegKeys      = "ERR Number of keys can't be negative"
	msgTooManyKeys  = "ERR Number of keys can't be greater than number of args"
	msgBadName      = "ERR Client names cannot contain spaces, newlines or special characters."
	msgClosed       = "ERR connection closed"
	msgNotSupported = "ERR redlockd does not support this form of '%s': %s"
)

func errArity(name string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", name)
}

func errExpire(name string) string {
	return fmt.Sprintf("ERR invalid expire time in '%s' command", name)
}

func errUnknownSub(sub, cmd string) string {
	return fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", sub, cmd)
}

// errUnknownCommand formats Redis's reply to a command it does not know:
// the arguments are quoted one by one while less than 128 bytes of them
// were written, each cut to what is left of those 128 bytes.
func errUnknownCommand(name string, args [][]byte) string {
	var quoted []byte
	for _, a := range args {
		if len(quoted) >= 128 {
			break
		}
		quoted = append(quoted, '\'')
		quoted = append(quoted, a[:min(len(a), 128-len(quoted)+1)]...)
		quoted = append(quoted, '\'', ' ')
	}
	return fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", name[:min(len(name), 128)], quoted)
}

// errNoQuorum formats the NOQUORUM error (docs/commands.md, How failures look).
func errNoQuorum(e *quorum.NoQuorumError) string {
	return fmt.Sprintf("NOQUORUM %d of %d backends answered: %s", e.Answered, e.Total, e.Reasons())
}

// writeLockError maps an error of the lock cluster to its reply. Contention
// is a null reply, never an error: redis-benchmark and lock libraries treat
// an error as fatal.
func writeLockError(w Writer, cmd string, err error) {
	noteVerdict(w, err)
	if err == quorum.ErrNotAcquired || err == quorum.ErrNotHeld {
		// Contention, the common case, is the bare sentinel: answered
		// without walking the error tree.
		w.WriteNull()
		return
	}
	switch nq, isNQ := errors.AsType[*quorum.NoQuorumError](err); {
	case isNQ:
		w.WriteError(errNoQuorum(nq))
	case errors.Is(err, quorum.ErrDisagreed):
		// A replicated script whose backends answered without a majority:
		// unavailability to a client, as too few answers are.
		w.WriteError("NOQUORUM " + err.Error())
	case errors.Is(err, quorum.ErrNotAcquired), errors.Is(err, quorum.ErrNotHeld):
		w.WriteNull()
	case errors.Is(err, quorum.ErrInvalidTTL):
		w.WriteError(errExpire(cmd))
	case errors.Is(err, context.Canceled):
		w.WriteError(msgClosed)
	default:
		w.WriteError("ERR " + err.Error())
	}
}
