package proxy

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/commands"
)

func newRequest(args ...string) commands.Request {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return commands.NewRequest(b)
}

// TestEvalSHAWaitsForItsEval: an EVALSHA that names, in either case, the
// body an EVAL of the run caches must wait for it; one that names another
// body, or any other command, need not; and only EVAL loads.
func TestEvalSHAWaitsForItsEval(t *testing.T) {
	body := "return redis.call('get', KEYS[1])"
	sum := sha1.Sum([]byte(body))
	name := hex.EncodeToString(sum[:])
	loaded := noteLoad(newRequest("GET", "k"), nil)
	loaded = noteLoad(newRequest("EVALSHA", name, "1", "k"), loaded)
	if len(loaded) != 0 {
		t.Fatalf("GET and EVALSHA loaded %d scripts", len(loaded))
	}
	loaded = noteLoad(newRequest("EVAL", "return 0", "0"), loaded)
	loaded = noteLoad(newRequest("eval_ro", body, "1", "k"), loaded)
	for _, n := range []string{name, strings.ToUpper(name)} {
		if !needsLoaded(newRequest("evalsha", n, "1", "x"), loaded) {
			t.Errorf("EVALSHA %s does not wait for the EVAL of its body", n)
		}
	}
	other := sha1.Sum([]byte("return 2"))
	for _, r := range []commands.Request{newRequest("EVALSHA", hex.EncodeToString(other[:]), "0"), newRequest("GET", name), newRequest("EVALSHA")} {
		if needsLoaded(r, loaded) {
			t.Errorf("%q waits for an EVAL it does not need", r.Args)
		}
	}
	if !loaded[1].summed || loaded[1].sum != sum {
		t.Errorf("the loaded body's SHA1 is %x (summed %v), want %x", loaded[1].sum, loaded[1].summed, sum)
	}
}
