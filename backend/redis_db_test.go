package backend

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// serverDBValue reads key in db of srv directly ("" when absent).
func serverDBValue(t *testing.T, srv *redistest.Server, db int, key string) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: db, DisableIdentity: true})
	defer c.Close()
	v, err := c.Get(t.Context(), key).Result()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return v
}

type release struct {
	db  int
	key string
}

// announce marks key as waited for in db (a refused SetNX with a wait
// mark) and deletes it with Notify, so that its release is announced.
func announce(t *testing.T, r *Redis, db int, key, token string) {
	t.Helper()
	steps := []quorum.Cmd{
		{Kind: quorum.SetNX, Key: key, Token: "other", TTL: time.Minute, Add: time.Minute, DB: db},
		{Kind: quorum.CompareAndDelete, Key: key, Token: token, Notify: true, DB: db},
	}
	for _, cmd := range steps {
		if rep := quorum.Call(t.Context(), r, cmd); rep.Err != nil {
			t.Fatalf("db %d %s: %v", db, OpName(cmd.Kind), rep.Err)
		}
	}
}

// Each Cmd runs in its DB of the server: the same key in three dbs is
// three keys. A db's lines are made on first use only, select their db
// and have the scripts loaded before their first command (no EVAL
// fallback on a fresh server).
func TestRedisDBsAreServerDBs(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	for _, db := range []int{4, 0, 15} {
		cmd := quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: "k", Token: fmt.Sprint("t", db), TTL: time.Minute, DB: db}
		if rep := quorum.Call(t.Context(), r, cmd); rep.Err != nil || !rep.OK {
			t.Fatalf("db %d: %+v", db, rep)
		}
	}
	for db := range quorum.DBs {
		want := ""
		if db == 0 || db == 4 || db == 15 {
			want = fmt.Sprint("t", db)
		}
		if got := serverDBValue(t, srv, db, "k"); got != want {
			t.Errorf("server db %d holds %q, want %q", db, got, want)
		}
		if made := r.dbs.muxes[db].Load() != nil; db != 0 && made != (want != "") {
			t.Errorf("db %d has lines: %v", db, made)
		}
	}
	stats, err := srv.Client().Info(t.Context(), "commandstats").Result()
	if err != nil || strings.Contains(stats, "cmdstat_eval:") {
		t.Fatalf("a script was sent as EVAL (not preloaded on a new db's line): %v\n%s", err, stats)
	}
	for _, db := range []int{-1, quorum.DBs} {
		rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.Get, Key: "k", DB: db})
		if rep.Err == nil || !strings.Contains(rep.Err.Error(), "database index out of range") {
			t.Errorf("db %d: %+v, want an error", db, rep)
		}
	}
}

// A release is announced with its db: a Cluster hears (db, key), and a
// proxy that knows db 0 only (subscribed to the release channel alone)
// never hears of another db's releases.
func TestRedisReleaseAnnouncedWithDB(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	heard := make(chan release, 16)
	r.Watch(quorum.Watcher{Released: func(db int, key string) { heard <- release{db, key} }})
	old := srv.Client().Subscribe(t.Context(), releaseChannel)
	defer old.Close()
	if _, err := old.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, []*redistest.Server{srv}, 2)
	for _, db := range []int{3, 0} {
		if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "t", TTL: time.Minute, DB: db}); !rep.OK {
			t.Fatalf("db %d: %+v", db, rep)
		}
		announce(t, r, db, "k", "t")
	}
	for _, want := range []release{{3, "k"}, {0, "k"}} {
		select {
		case got := <-heard:
			if got != want {
				t.Fatalf("heard %+v, want %+v", got, want)
			}
		case <-time.After(pollBound):
			t.Fatalf("no release of %+v heard", want)
		}
	}
	// Messages on one server arrive in order: db 3's came first, so had
	// it reached the old subscriber, it would be this one.
	msg, err := old.ReceiveMessage(t.Context())
	if err != nil || msg.Channel != releaseChannel || msg.Payload != "k" {
		t.Fatalf("the db-0 subscriber got %+v, %v; want db 0's release of k only", msg, err)
	}
}

// A node whose URL names db 2 keeps database 0 there, as it always did;
// database n > 0 is the server's db n, and db 2's releases reach the
// Cluster as database 0's.
func TestRedisURLDBIsDatabaseZero(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, fmt.Sprintf("redis://%s/2", srv.Addr()))
	heard := make(chan release, 16)
	r.Watch(quorum.Watcher{Released: func(db int, key string) { heard <- release{db, key} }})
	for _, db := range []int{0, 5} {
		if rep := quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: fmt.Sprint("t", db), TTL: time.Minute, DB: db}); !rep.OK {
			t.Fatalf("db %d: %+v", db, rep)
		}
	}
	for db, want := range map[int]string{0: "", 2: "t0", 5: "t5"} {
		if got := serverDBValue(t, srv, db, "k"); got != want {
			t.Errorf("server db %d holds %q, want %q", db, got, want)
		}
	}
	poll(t, "the release subscription", func() bool {
		n, err := srv.Client().Do(t.Context(), "pubsub", "numsub", dbChannel(2)).Slice()
		return err == nil && len(n) == 2 && n[1] == int64(1)
	})
	announce(t, r, 0, "k", "t0")
	got := map[release]bool{}
	for len(got) < 2 {
		select {
		case rel := <-heard:
			got[rel] = true
		case <-time.After(pollBound):
			t.Fatalf("heard %v, want db 0's and db 2's release of k", got)
		}
	}
	if !got[release{0, "k"}] || !got[release{2, "k"}] {
		t.Fatalf("heard %v, want db 0's and db 2's release of k", got)
	}
}
