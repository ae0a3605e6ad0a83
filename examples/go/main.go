// Command go-client shows two ways to take a lock from Go through redlockd
// with an unchanged go-redis client: the LOCK/UNLOCK commands, and the
// SET NX PX form that any Redis lock helper already sends.
//
//	go run ./examples/go -addr 127.0.0.1:6380
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "redlockd address")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()

	// LOCK key ttl-ms [WAIT ms]: the proxy picks the token.
	reply, err := rdb.Do(ctx, "LOCK", "report:daily", 10_000, "WAIT", 2_000).Slice()
	switch {
	case errors.Is(err, redis.Nil):
		log.Fatal("someone else holds report:daily")
	case err != nil:
		log.Fatal(err) // NOQUORUM …: too few backends answered
	}
	token, validity := reply[0].(string), time.Duration(reply[1].(int64))*time.Millisecond
	fmt.Printf("locked with token %s, safe for %v\n", token, validity)
	// … do the work, finishing well within validity (or RENEW key token ttl) …
	released, err := rdb.Do(ctx, "UNLOCK", "report:daily", token).Int()
	fmt.Println("released:", released == 1, err)

	// SET key token NX PX ms: the client picks the token; OK or nil.
	mine := newToken()
	ok, err := rdb.SetNX(ctx, "report:weekly", mine, 10*time.Second).Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acquired with SET NX PX:", ok)
	if ok {
		// The compare-and-delete every lock library sends is recognised too.
		del := redis.NewScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)
		n, err := del.Run(ctx, rdb, []string{"report:weekly"}, mine).Int()
		fmt.Println("released:", n == 1, err)
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
