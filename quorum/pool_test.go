package quorum

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/raceflag"
)

// keyedNode answers at once: yes, unless the key starts with "no-" and
// the command stores a token (a release is always a yes).
// It stays a stub: it is lateNode's base and the fast nodes beside it, in this internal package, which cannot import the engine.
type keyedNode struct{ yesNode }

func (n keyedNode) Do(_ time.Time, cmd Cmd, r Receiver) {
	r.Receive(Reply{OK: !storesToken(cmd.Kind) || !strings.HasPrefix(cmd.Key, "no-"), N: 1})
}

// lateNode answers every command from a goroutine of its own, after the
// command's round was most often decided by the other nodes: the late
// replies that race a pooled round's recycling. Before each reply it
// checks that the round the reply goes to is still the one that asked
// (its command's key and token): a round recycled while a call still
// held it would be asking something else, or nothing, by then.
// It stays a stub: it reads the round behind its receiver (*nodeCall), so it lives in package quorum, which cannot import the engine.
type lateNode struct {
	keyedNode
	mu     sync.Mutex
	queue  []lateReply
	closed bool
	more   chan struct{} // buffered 1: the queue has replies
	done   chan struct{}
	bad    atomic.Value // the first mismatch found, a string
}

type lateReply struct {
	cmd Cmd
	r   Receiver
}

func newLateNode(name string) *lateNode {
	n := &lateNode{keyedNode: keyedNode{yesNode{name}}, more: make(chan struct{}, 1), done: make(chan struct{})}
	go n.pump()
	return n
}

// Do queues the reply without ever blocking: the pump itself gives an
// undo's release to this node.
func (n *lateNode) Do(_ time.Time, cmd Cmd, r Receiver) {
	n.mu.Lock()
	n.queue = append(n.queue, lateReply{cmd, r})
	n.mu.Unlock()
	select {
	case n.more <- struct{}{}:
	default:
	}
}

func (n *lateNode) pump() {
	defer close(n.done)
	i := 0
	for {
		n.mu.Lock()
		batch, closed := n.queue, n.closed
		n.queue = nil
		n.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-n.more
			continue
		}
		for _, l := range batch {
			if i++; i%3 == 0 {
				runtime.Gosched() // let the asking goroutine move on first
			}
			n.check(l)
			n.keyedNode.Do(time.Time{}, l.cmd, l.r)
		}
	}
}

// check records a reply about to go to a round that no longer asks what
// l was asked.
func (n *lateNode) check(l lateReply) {
	nc := l.r.(*nodeCall)
	var asked Cmd
	if r := nc.r; r != nil && r.same != nil {
		asked = *r.same
	}
	if asked.Key != l.cmd.Key || asked.Token != l.cmd.Token {
		n.bad.CompareAndSwap(nil, fmt.Sprintf("a reply to %s=%s went to a round asking %s=%s", l.cmd.Key, l.cmd.Token, asked.Key, asked.Token))
	}
}

// stop ends the pump once every command given to it is answered; the
// rounds that gave them have all ended.
func (n *lateNode) stop(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	select {
	case n.more <- struct{}{}:
	default:
	}
	<-n.done
	if bad := n.bad.Load(); bad != nil {
		t.Error(bad)
	}
}

// Pooled rounds go back to their pool only once nothing holds them: a
// node that answers after the round was decided (granted by the two fast
// nodes, or refused by them and then undone) still finds its round asking
// what it was asked, and every caller gets the outcome of its own round.
// Many rounds run at once, so recycled records are taken again at once.
func TestPooledRoundsOutliveLateReplies(t *testing.T) {
	for _, tc := range []struct {
		n   int
		obs Observer
	}{{3, nil}, {3, nopObserver{}}, {5, nopObserver{}}} {
		obs := tc.obs
		t.Run(fmt.Sprintf("N=%d,observer=%v", tc.n, obs != nil), func(t *testing.T) {
			// The last node answers late; the others decide the round.
			late := newLateNode("late")
			nodes := []Node{late}
			for i := range tc.n - 1 {
				nodes = append([]Node{keyedNode{yesNode{string(rune('a' + i))}}}, nodes...)
			}
			cfg := testConfig()
			cfg.Observer = obs
			c := newCluster(t, nodes, cfg)
			rounds := 4000
			if raceflag.Enabled {
				rounds = 1000
			}
			var wg sync.WaitGroup
			var failures atomic.Value
			fail := func(format string, args ...any) { failures.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine sync.WaitGroup
					for i := range rounds {
						key := fmt.Sprintf("k%d-%d", g, i)
						if i%4 == 3 {
							key = "no-" + key // refused by the fast nodes: undone after the late yes
						}
						tok := fmt.Sprintf("t%d-%d", g, i)
						mine.Add(2)
						c.AcquireAsync(nil, SetNX, key, tok, time.Second, func(l Lock, err error) {
							defer mine.Done()
							switch {
							case strings.HasPrefix(key, "no-"):
								if err != ErrNotAcquired {
									fail("acquire of %s: %v, want not acquired", key, err)
								}
							case err != nil || l.Key != key || l.Token != tok:
								fail("acquire of %s=%s: %+v, %v", key, tok, l, err)
							}
						})
						c.ReleaseAsync(nil, key, tok, func(ok bool, err error) {
							defer mine.Done()
							if err != nil || !ok {
								fail("release of %s=%s: %v, %v", key, tok, ok, err)
							}
						})
					}
					mine.Wait()
				}()
			}
			wg.Wait()
			late.stop(t)
			if f := failures.Load(); f != nil {
				t.Fatal(f)
			}
		})
	}
}
