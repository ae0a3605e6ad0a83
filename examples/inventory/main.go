// Command inventory is the "sell the last items" demo: several copies of
// this service sell from one stock counter kept in a plain Redis (the
// store), each sale a read-modify-write with a pause in the middle, as a
// real service that calls a payment provider would have. Run without a
// lock, the copies overwrite each other's decrements and sell more items
// than there were; run with -lock, each sale happens under a redlockd lock.
//
// With -fence the lock also carries a fencing token (LOCK … FENCE), and
// the store refuses a write whose token is older than one it has already
// accepted, so even a holder that paused past its lock's validity (a GC
// pause, a stalled VM) cannot overwrite a newer holder's write.
//
//	go run ./examples/inventory -store 127.0.0.1:6379 -redlockd 127.0.0.1:6380 -lock -fence
//
// The first copy to start puts -stock items (default 100) in the store
// when it has none; the others find them there. It prints "sold N" and
// exits when the stock is gone. To start over, take the demo's keys out
// of the store:
//
//	redis-cli -p 6379 DEL inventory:stock inventory:sold inventory:fence
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// Keys in the store.
const (
	stockKey = "inventory:stock"
	soldKey  = "inventory:sold"  // total sales, summed over every service
	fenceKey = "inventory:fence" // largest fencing token the store accepted
	lockKey  = "inventory:lock"  // the redlockd lock guarding the stock
	gateKey  = "inventory:gate"  // -gate: one item per service starts the sale
)

// fencedSale is the store's side of fencing: the decrement is applied only
// if the caller's token is not older than the last one accepted, checked
// and written atomically by the store itself.
var fencedSale = redis.NewScript(`
local last = tonumber(redis.call("get", KEYS[2]) or "0")
if tonumber(ARGV[1]) < last then return -1 end
redis.call("set", KEYS[2], ARGV[1])
redis.call("set", KEYS[1], ARGV[2])
redis.call("incr", KEYS[3])
return 1`)

type config struct {
	store, redlockd string
	lock, fence     bool
	delay, ttl      time.Duration
	maxSales        int
	gate            bool
	stock           int
}

func main() {
	var c config
	flag.StringVar(&c.store, "store", "127.0.0.1:6379", "address of the plain Redis holding the stock")
	flag.StringVar(&c.redlockd, "redlockd", "127.0.0.1:6380", "address of redlockd")
	flag.BoolVar(&c.lock, "lock", false, "sell under a redlockd lock")
	flag.BoolVar(&c.fence, "fence", false, "with -lock: take a fencing token and let the store check it")
	flag.DurationVar(&c.delay, "delay", 5*time.Millisecond, "pause between reading and writing the stock")
	flag.DurationVar(&c.ttl, "ttl", 5*time.Second, "lock ttl")
	flag.IntVar(&c.maxSales, "max", 1000, "stop after this many sales (a bound, not a goal)")
	flag.IntVar(&c.stock, "stock", 100, "items to put in the store when it has no stock yet")
	flag.BoolVar(&c.gate, "gate", false, "wait for an item on the store's list "+gateKey+" before selling, so that several copies start together")
	flag.Parse()
	sold, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
	fmt.Printf("sold %d\n", sold)
}

func run(ctx context.Context, c config) (int, error) {
	store := redis.NewClient(&redis.Options{Addr: c.store})
	defer store.Close()
	var locks *redis.Client
	if c.lock {
		locks = redis.NewClient(&redis.Options{Addr: c.redlockd})
		defer locks.Close()
	}
	// SET NX: of several copies started together, one seeds the stock.
	if err := store.SetNX(ctx, stockKey, c.stock, 0).Err(); err != nil {
		return 0, fmt.Errorf("seeding the stock: %w", err)
	}
	if c.gate {
		if err := store.BLPop(ctx, time.Minute, gateKey).Err(); err != nil {
			return 0, fmt.Errorf("waiting at the gate: %w", err)
		}
	}
	sold := 0
	for sold < c.maxSales {
		ok, err := sellOne(ctx, c, store, locks)
		if err != nil {
			return sold, err
		}
		if !ok {
			return sold, nil // out of stock
		}
		sold++
	}
	return sold, nil
}

// sellOne sells one item; false means the stock is gone.
func sellOne(ctx context.Context, c config, store, locks *redis.Client) (bool, error) {
	if locks == nil {
		return sale(ctx, c, store, 0)
	}
	token, fence, err := acquire(ctx, c, locks)
	if err != nil {
		return false, err
	}
	defer locks.Do(context.WithoutCancel(ctx), "UNLOCK", lockKey, token)
	return sale(ctx, c, store, fence)
}

// acquire waits for the lock: LOCK key ttl WAIT ms [FENCE] replies
// [token, validity-ms] or [token, validity-ms, fence], or null while
// another service holds it past the wait.
func acquire(ctx context.Context, c config, locks *redis.Client) (string, int64, error) {
	args := []any{"LOCK", lockKey, c.ttl.Milliseconds(), "WAIT", 10_000}
	if c.fence {
		args = append(args, "FENCE")
	}
	for {
		reply, err := locks.Do(ctx, args...).Slice()
		if errors.Is(err, redis.Nil) {
			continue // held for the whole wait: ask again
		}
		if err != nil {
			return "", 0, fmt.Errorf("LOCK: %w", err)
		}
		token, _ := reply[0].(string)
		var fence int64
		if c.fence && len(reply) == 3 {
			fence, _ = reply[2].(int64)
		}
		return token, fence, nil
	}
}

// sale is the read-modify-write: read the stock, pause, write it back one
// lower and count the sale.
func sale(ctx context.Context, c config, store *redis.Client, fence int64) (bool, error) {
	stock, err := store.Get(ctx, stockKey).Int()
	if err != nil {
		return false, fmt.Errorf("GET stock: %w", err)
	}
	if stock <= 0 {
		return false, nil
	}
	time.Sleep(c.delay) // the work between read and write: the race window
	if fence > 0 {
		res, err := fencedSale.Run(ctx, store, []string{stockKey, fenceKey, soldKey}, fence, stock-1).Int()
		if err != nil {
			return false, fmt.Errorf("fenced write: %w", err)
		}
		if res < 0 {
			return false, errors.New("store refused a stale fencing token: this lock had expired")
		}
		return true, nil
	}
	if err := store.Set(ctx, stockKey, stock-1, 0).Err(); err != nil {
		return false, err
	}
	return true, store.Incr(ctx, soldKey).Err()
}
