package nodetest

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/redlockd/redlockd/quorum"
)

// Script is the client script of source src, named by its SHA1 as a
// Redis server names it.
func Script(src string) *quorum.Script {
	sum := sha1.Sum([]byte(src))
	return &quorum.Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// EvalCmd is the node command that runs src over keys and args.
func EvalCmd(src string, keys []string, args ...string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.Eval, Script: Script(src), Keys: keys, Args: args}
}
