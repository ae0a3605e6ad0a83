package backend

import (
	"errors"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// KeyError is err, a node's error for a command of kind k, with an error
// reply about the command's key (one that quorum.KeyReplyCode names: the
// key holds another type of value, a hash that a client's script wrote,
// say) as redis-server gives it to the plain command: without what a
// script run adds to it ("… script: <sha>, on @user_script:1." on Redis
// 7, "ERR Error running script (call to f_<sha>): @user_script:1: …"
// before), so that every node gives the same text and code. The quorum
// counts such a reply as the node's answer (quorum.Reply.ErrReply). Any
// other error is returned as it is, as is every error of the kinds whose
// errors are not about a client's key (see quorum.KeyReplies).
func KeyError(k quorum.CmdKind, err error) error {
	if !quorum.KeyReplies(k) {
		return err
	}
	var se ServerError
	if !errors.As(err, &se) {
		return err
	}
	if plain := serverError(plainError(se.Text)); quorum.KeyReplyCode(plain.Code) {
		return plain
	}
	return err
}

// KeyErrorTTL is what a Get that failed with err (see KeyError) read of
// the key's ttl: a key of another type has one all the same. 0 for any
// other failure.
func KeyErrorTTL(k quorum.CmdKind, err error, out quorum.Reply) time.Duration {
	if k != quorum.Get {
		return 0
	}
	if code, ok := quorum.ReplyCode(err); !ok || !quorum.KeyReplyCode(code) {
		return 0
	}
	return out.TTL
}

// plainError is an error reply of a script's redis.call as the command
// itself gives it: without Redis 7's " script: <sha>, on
// @user_script:<line>." suffix, or the "ERR Error running script (call
// to f_<sha>): @user_script:<line>: " prefix of earlier versions.
func plainError(text string) string {
	if i := strings.LastIndex(text, " script: "); i >= 0 && strings.Contains(text[i:], ", on @user_script:") {
		text = text[:i]
	}
	const older = "ERR Error running script "
	if rest, ok := strings.CutPrefix(text, older); ok {
		if _, inner, ok := strings.Cut(rest, "@user_script:"); ok {
			if _, msg, ok := strings.Cut(inner, ": "); ok {
				text = msg
			}
		}
	}
	return text
}

// serverError is the error reply of text ("CODE message").
func serverError(text string) ServerError {
	code, _, _ := strings.Cut(text, " ")
	return ServerError{Code: code, Text: text}
}
