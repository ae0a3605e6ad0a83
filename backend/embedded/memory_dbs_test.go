package embedded

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// Every command of the in-memory node runs in its DB: an owner lock in db
// 4, a plain lock and a fence in db 0 under the same names do not meet,
// and a release is announced with its db.
func TestMemoryDBsApart(t *testing.T) {
	m, _ := newTestMemory(t)
	type rel struct {
		db  int
		key string
	}
	var heard []rel
	m.Watch(quorum.Watcher{Released: func(db int, k string) { heard = append(heard, rel{db, k}) }})
	do := func(c quorum.Cmd) quorum.Reply {
		t.Helper()
		r := quorum.Call(t.Context(), m, c)
		if r.Err != nil {
			t.Fatalf("%+v: %v", c, r.Err)
		}
		return r
	}
	pfx := quorum.OwnerPrefix("o")
	hold := quorum.Cmd{Kind: quorum.HoldOwner, Key: memK, Prefix: pfx, Token: pfx + "1", TTL: time.Minute, DB: 4}
	for i, mk := range []string{"r1", "r2"} {
		hold.Mark = mk
		if r := do(hold); !r.OK || r.N != int64(i+1) {
			t.Fatalf("HoldOwner %d in db 4: %+v", i+1, r)
		}
	}
	if r := do(memSetNX(memK, "plain", time.Minute)); !r.OK {
		t.Fatalf("SetNX in db 0 with db 4 held: %+v", r)
	}
	do(quorum.Cmd{Kind: quorum.RaiseFence, Key: "f", N: 9, TTL: time.Minute, DB: 3})
	if r := do(quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}); r.N != 0 {
		t.Fatalf("db 0 fence = %d, want db 3's apart", r.N)
	}
	// A waiter marks db 4's key; its last hold's drop is announced as db 4's.
	do(quorum.Cmd{Kind: quorum.SetNX, Key: memK, Token: "w", TTL: time.Minute, Add: time.Minute, DB: 4})
	for range 2 {
		do(quorum.Cmd{Kind: quorum.Unhold, Key: memK, Token: pfx + "1", DB: 4})
	}
	if len(heard) != 1 || heard[0] != (rel{4, memK}) {
		t.Fatalf("announced %v, want db 4's %q", heard, memK)
	}
	if r := do(quorum.Cmd{Kind: quorum.Get, Key: memK}); r.Token != "plain" {
		t.Fatalf("db 0 holds %q after db 4's release", r.Token)
	}
	if r := do(quorum.Cmd{Kind: quorum.Get, Key: memKHolds, DB: 4}); r.OK {
		t.Fatalf("db 4's hold count left: %+v", r)
	}
}

func TestMemoryRefusesBadDB(t *testing.T) {
	m, _ := newTestMemory(t)
	for _, db := range []int{-1, quorum.DBs} {
		r := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Get, Key: memK, DB: db})
		if !errors.Is(r.Err, backend.ErrBadDB) {
			t.Errorf("db %d: %+v, want backend.ErrBadDB", db, r)
		}
	}
}
