package quorum_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/raceflag"
)

// The async acquires and releases recycle their rounds. Here one node
// answers late, some of its replies after the round was decided by the
// others and some after the node timeout (its delay is changed while the
// rounds run), so late replies race the recycling, while clients contend
// for a few keys. A round recycled too early would hand a late reply to
// another client's round: a lock granted twice at once, a Lock naming
// another key or token, or a callback called twice.
func TestAsyncRoundsUnderLateReplies(t *testing.T) {
	fs, nodes := newNodes(3)
	cfg := testConfig()
	cfg.NodeTimeout = 20 * time.Millisecond
	c := newCluster(t, nodes, cfg)

	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		delays := []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 3 * cfg.NodeTimeout}
		for i := 0; ; i++ {
			select {
			case <-stop:
				fs[2].SetOpDelay(opSetNX, 0)
				fs[2].SetOpDelay(opCAD, 0)
				return
			default:
			}
			fs[2].SetOpDelay(opSetNX, delays[i%len(delays)])
			fs[2].SetOpDelay(opCAD, delays[(i+1)%len(delays)])
			time.Sleep(time.Millisecond) // not a synchronisation: a change of fault every so often
		}
	}()

	const keys = 4
	var holders [keys]atomic.Value // the token holding key i, as this test granted it; "" when none
	for i := range holders {
		holders[i].Store("")
	}
	var failure atomic.Value
	fail := func(format string, args ...any) { failure.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	clients, rounds := 8, 300
	if raceflag.Enabled {
		rounds = 100
	}
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				k := (cl + i) % keys
				key, tok := fmt.Sprintf("key%d", k), fmt.Sprintf("c%d-%d", cl, i)
				got := make(chan quorum.Lock, 2)
				var calls atomic.Int32
				c.AcquireAsync(nil, quorum.SetNX, key, tok, 10*time.Second, func(l quorum.Lock, err error) {
					if calls.Add(1) > 1 {
						fail("acquire of %s=%s called back twice", key, tok)
					}
					if err != nil {
						l = quorum.Lock{}
					}
					got <- l
				})
				l := <-got
				if l == (quorum.Lock{}) {
					continue // contended, or too few nodes answered in time
				}
				if l.Key != key || l.Token != tok {
					fail("acquire of %s=%s returned %+v", key, tok, l)
					return
				}
				if !holders[k].CompareAndSwap("", tok) {
					fail("%s granted to %s while %v held it", key, tok, holders[k].Load())
					return
				}
				// Given up before the release is sent: from here on the
				// key may be granted again.
				holders[k].Store("")
				released := make(chan struct{})
				c.ReleaseAsync(nil, key, tok, func(bool, error) {
					if calls.Add(1) > 2 {
						fail("release of %s=%s called back twice", key, tok)
					}
					close(released)
				})
				<-released
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-flipped
	if f := failure.Load(); f != nil {
		t.Fatal(f)
	}
}
