package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

const (
	services = 4
	stock    = 15
)

// sell runs the services against a fresh stock and returns the total of
// sales they counted and the stock left.
func sell(t *testing.T, bin string, store *redistest.Server, redlockd string, flags ...string) (sold, left int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := store.Client()
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rc.Set(ctx, stockKey, stock, 0)
	args := append([]string{"-store", store.Addr(), "-redlockd", redlockd, "-gate", "-delay", "20ms"}, flags...)
	var wg sync.WaitGroup
	errs := make([]error, services)
	outs := make([]bytes.Buffer, services)
	for i := range services {
		cmd := childproc.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := childproc.Start(cmd); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	openGate(t, ctx, rc)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("service %d: %v\n%s", i, err, outs[i].String())
		}
	}
	sold, _ = rc.Get(ctx, soldKey).Int()
	left, _ = rc.Get(ctx, stockKey).Int()
	return sold, left
}

// openGate waits until every service blocks on the gate list, then lets
// them all go at once, so that their sales overlap.
func openGate(t *testing.T, ctx context.Context, rc *redis.Client) {
	t.Helper()
	for i := 0; ; i++ {
		info := rc.Info(ctx, "clients").Val()
		if blockedClients(info) >= services {
			break
		}
		if i == 2000 {
			t.Fatalf("services never reached the gate:\n%s", info)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded above
	}
	for range services {
		rc.RPush(ctx, gateKey, "go")
	}
}

func blockedClients(info string) int {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func TestInventory(t *testing.T) {
	bin := redlocktest.Build(t, "./examples/inventory")
	store := redistest.Start(t)
	redlockd := redlocktest.Start(t, redlocktest.Options{}).Addr

	t.Run("without a lock it oversells", func(t *testing.T) {
		sold, _ := sell(t, bin, store, redlockd)
		if sold <= stock {
			t.Fatalf("sold %d of %d without a lock: the race did not show", sold, stock)
		}
		t.Logf("without a lock: sold %d of %d", sold, stock)
	})
	t.Run("with LOCK it sells exactly the stock", func(t *testing.T) {
		if sold, left := sell(t, bin, store, redlockd, "-lock"); sold != stock || left != 0 {
			t.Fatalf("sold %d of %d, %d left", sold, stock, left)
		}
	})
	t.Run("an empty store gets the -stock items", func(t *testing.T) {
		ctx := context.Background()
		rc := store.Client()
		if err := rc.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		out, err := childproc.CombinedOutput(childproc.CommandContext(ctx, bin, "-store", store.Addr(), "-redlockd", redlockd, "-lock", "-fence", "-stock", "7"))
		if err != nil || strings.TrimSpace(string(out)) != "sold 7" {
			t.Fatalf("on an empty store: %v, %q; want sold 7", err, out)
		}
	})
	t.Run("with LOCK FENCE it sells exactly the stock", func(t *testing.T) {
		if sold, left := sell(t, bin, store, redlockd, "-lock", "-fence"); sold != stock || left != 0 {
			t.Fatalf("sold %d of %d, %d left", sold, stock, left)
		}
		if f, _ := store.Client().Get(context.Background(), fenceKey).Int64(); f <= 0 {
			t.Fatalf("the store saw no fencing token (%d)", f)
		}
	})
}
