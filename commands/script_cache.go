package commands

import (
	"container/list"
	"sync"

	"github.com/redlockd/redlockd/commands/scriptcheck"
	"github.com/redlockd/redlockd/quorum"
)

// The proxy's script cache: what EVAL and SCRIPT LOAD were given, by SHA1,
// with the static check's verdict, so that EVALSHA finds the body and no
// body is checked twice. A body the check refused is cached as refused (its
// text is not kept), so that a client cannot make the proxy parse one
// body over and over. The cache is bounded by count and by bytes, the
// least recently used body going first; an evicted script is a NOSCRIPT,
// which clients answer with EVAL, as after a server's SCRIPT FLUSH.
const (
	maxCachedScripts     = 10000
	maxCachedScriptBytes = 64 << 20
)

// cachedScript is one body the cache holds.
type cachedScript struct {
	sha    string
	script *quorum.Script // nil when refused
	info   scriptcheck.Info
	err    error // the check's refusal
}

// size is what the entry costs the byte bound.
func (e *cachedScript) size() int {
	if e.script == nil {
		return len(e.sha)
	}
	return len(e.sha) + len(e.script.Src)
}

type scriptCache struct {
	mu    sync.Mutex
	ll    *list.List // front: most recently used
	byS   map[string]*list.Element
	bytes int
	max   int // entries
	maxB  int // bytes
	check func(string) (scriptcheck.Info, error)
}

func newScriptCache() *scriptCache {
	return &scriptCache{ll: list.New(), byS: map[string]*list.Element{}, max: maxCachedScripts, maxB: maxCachedScriptBytes, check: scriptcheck.Check}
}

// get finds sha (lower-case hex) and marks it used.
func (c *scriptCache) get(sha string) (*cachedScript, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byS[sha]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cachedScript), true
}

// add returns the entry of body (named sha), checking and caching it
// when it is new.
func (c *scriptCache) add(sha, body string) *cachedScript {
	if e, ok := c.get(sha); ok {
		return e
	}
	e := &cachedScript{sha: sha}
	if e.info, e.err = c.check(body); e.err == nil {
		e.script = &quorum.Script{Src: body, SHA: sha}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byS[sha]; ok { // added meanwhile
		return el.Value.(*cachedScript)
	}
	c.byS[sha] = c.ll.PushFront(e)
	c.bytes += e.size()
	for c.ll.Len() > c.max || (c.bytes > c.maxB && c.ll.Len() > 1) {
		old := c.ll.Remove(c.ll.Back()).(*cachedScript)
		delete(c.byS, old.sha)
		c.bytes -= old.size()
	}
	return e
}

// has reports whether sha names a runnable cached script.
func (c *scriptCache) has(sha string) bool {
	e, ok := c.get(sha)
	return ok && e.err == nil
}

// flush forgets every body.
func (c *scriptCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	c.byS = map[string]*list.Element{}
	c.bytes = 0
}
