package compat

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// BenchmarkRueidisLockWake measures how long a rueidislock waiter takes to
// be granted the lock after its holder released it through the other
// side: on one redis-server (both lockers on it), and through two
// redlockd proxies over three redis-servers (the holder on one, the
// waiter on the other); each with rueidislock's defaults and with
// NoLoopTracking. It reports the median and the 90th percentile.
//
//	go -C compat test -run '^$' -bench RueidisLockWake -benchtime 200x
func BenchmarkRueidisLockWake(b *testing.B) {
	for _, noLoop := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "/noloop"}[noLoop]
		b.Run("redis-server"+suffix, func(b *testing.B) {
			addr := redistest.Start(b).Addr()
			benchWake(b, addr, addr, 1, noLoop)
		})
		b.Run("redlockd"+suffix, func(b *testing.B) {
			a := startRedlockd(b)
			o := startSecond(b, a)
			benchWake(b, a.Addr, o.Addr, 3, noLoop)
		})
	}
}

func benchWake(b *testing.B, addrA, addrB string, nodes int, noLoop bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	warmTracking(b, ctx, addrA, addrB, nodes)
	spy := &triesSpy{refused: make(chan struct{}, 1), noLoop: noLoop}
	waiterSide := newLocker(b, addrA, validity, 0, spy)
	holderSide := newLocker(b, addrB, validity, 0, &triesSpy{noLoop: noLoop})
	woke := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		_, release, err := holderSide.WithContext(ctx, "bench")
		if err != nil {
			b.Fatalf("holder: %v", err)
		}
		drain(spy.refused)
		granted := make(chan time.Time, 1)
		done := make(chan context.CancelFunc, 1)
		go func() {
			_, c, err := waiterSide.WithContext(ctx, "bench")
			granted <- time.Now()
			if err != nil {
				c = func() {}
			}
			done <- c
		}()
		<-spy.refused
		t0 := time.Now()
		release()
		woke = append(woke, (<-granted).Sub(t0))
		(<-done)()
	}
	b.StopTimer()
	slices.Sort(woke)
	b.ReportMetric(float64(woke[len(woke)/2].Microseconds()), "p50-wake-µs")
	b.ReportMetric(float64(woke[len(woke)*9/10].Microseconds()), "p90-wake-µs")
}
