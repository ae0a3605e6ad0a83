package backend

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// redisDoCase is one Cmd run through quorum.Call on a flushed server: the
// commands that set the server up, the reply wanted, and what the server
// must hold afterwards.
type redisDoCase struct {
	name  string
	setup [][]any
	cmd   quorum.Cmd
	want  quorum.Reply
	// ttl, when set, is the reply's TTL; ttlOver and ttlUpTo bound it
	// instead, for a ttl that runs down while the test reads it.
	ttlOver time.Duration
	wantErr error
	// state is each key's value afterwards ("": absent).
	state map[string]string
	// pttlOver is a bound each key's remaining ttl must exceed afterwards.
	pttlOver map[string]time.Duration
	// published is the key the command must announce on the release
	// channel ("": it announces nothing).
	published string
}

const (
	tok   = "tok"
	other = "other"
	min1  = "60000"
)

var (
	mark   = "redlockd:hold:{k}:r1"
	holdsK = quorum.HoldsKey("k")
	wk     = WaitKey("k")
	pfx    = quorum.OwnerPrefix("o")
)

func set(k, v string, px ...string) []any {
	out := []any{"set", k, v}
	if len(px) > 0 {
		out = append(out, "px", px[0])
	}
	return out
}

var lockCases = []redisDoCase{
	{name: "SetNX absent", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true}, state: map[string]string{"k": tok, wk: ""}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "SetNX held", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute},
		state: map[string]string{"k": other, wk: ""}},
	{name: "SetNX marked, held", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute, Add: 30 * time.Second},
		state: map[string]string{"k": other, wk: "1"}, pttlOver: map[string]time.Duration{wk: 20 * time.Second}},
	{name: "SetNX marked, absent", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok, TTL: time.Minute, Add: 30 * time.Second},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": tok, wk: ""}},
	{name: "SetNX zero ttl", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: tok}, wantErr: ErrInvalidTTL, state: map[string]string{"k": ""}},
	{name: "Set over another", setup: [][]any{set("k", other, "1000")}, cmd: quorum.Cmd{Kind: quorum.Set, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true}, state: map[string]string{"k": tok}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "Set negative ttl", cmd: quorum.Cmd{Kind: quorum.Set, Key: "k", Token: tok, TTL: -time.Second}, wantErr: ErrInvalidTTL},
	{name: "CompareAndDelete held", setup: [][]any{set("k", tok, min1)}, cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": ""}},
	{name: "CompareAndDelete other", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok},
		want: quorum.Reply{N: 0}, state: map[string]string{"k": other}},
	{name: "CompareAndDelete absent", cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok}, want: quorum.Reply{N: -1}},
	{name: "CompareAndDelete notify marked", setup: [][]any{set("k", tok, min1), set(wk, "1", min1)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok, Notify: true},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": ""}, published: "k"},
	{name: "CompareAndDelete notify unmarked", setup: [][]any{set("k", tok, min1)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok, Notify: true},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": ""}},
	{name: "CompareAndDelete notify other", setup: [][]any{set("k", other, min1), set(wk, "1", min1)},
		cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok, Notify: true}, state: map[string]string{"k": other}},
	{name: "CompareAndDelete notify absent", cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: tok, Notify: true}, want: quorum.Reply{N: -1}},
	{name: "CompareAndExtend held", setup: [][]any{set("k", tok, "5000")}, cmd: quorum.Cmd{Kind: quorum.CompareAndExtend, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "CompareAndExtend other", setup: [][]any{set("k", other, "5000")}, cmd: quorum.Cmd{Kind: quorum.CompareAndExtend, Key: "k", Token: tok, TTL: time.Minute},
		state: map[string]string{"k": other}},
	{name: "CompareAndExtend absent", cmd: quorum.Cmd{Kind: quorum.CompareAndExtend, Key: "k", Token: tok, TTL: time.Minute}},
	{name: "Get present", setup: [][]any{set("k", tok, min1)}, cmd: quorum.Cmd{Kind: quorum.Get, Key: "k"},
		want: quorum.Reply{OK: true, Token: tok}, ttlOver: 50 * time.Second},
	{name: "Get absent", cmd: quorum.Cmd{Kind: quorum.Get, Key: "k"}},
	{name: "Get without expiry", setup: [][]any{set("k", tok)}, cmd: quorum.Cmd{Kind: quorum.Get, Key: "k"},
		want: quorum.Reply{OK: true, Token: tok, TTL: -time.Millisecond}},
	{name: "Delete present", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.Delete, Key: "k"},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": ""}},
	{name: "Delete absent", cmd: quorum.Cmd{Kind: quorum.Delete, Key: "k"}},
	{name: "Delete notify marked", setup: [][]any{set("k", other, min1), set(wk, "1", min1)}, cmd: quorum.Cmd{Kind: quorum.Delete, Key: "k", Notify: true},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": ""}, published: "k"},
	{name: "Expire present", setup: [][]any{set("k", other, "5000")}, cmd: quorum.Cmd{Kind: quorum.Expire, Key: "k", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "Expire absent", cmd: quorum.Cmd{Kind: quorum.Expire, Key: "k", TTL: time.Minute}},
	{name: "AddTTL held", setup: [][]any{set("k", tok, "10000")}, cmd: quorum.Cmd{Kind: quorum.AddTTL, Key: "k", Token: tok, Add: 20 * time.Second, Limit: time.Minute},
		want: quorum.Reply{OK: true}, ttlOver: 25 * time.Second, pttlOver: map[string]time.Duration{"k": 25 * time.Second}},
	{name: "AddTTL capped", setup: [][]any{set("k", tok, "10000")}, cmd: quorum.Cmd{Kind: quorum.AddTTL, Key: "k", Token: tok, Add: time.Minute, Limit: 20 * time.Second},
		want: quorum.Reply{OK: true, TTL: 20 * time.Second}},
	{name: "AddTTL other", setup: [][]any{set("k", other, "10000")}, cmd: quorum.Cmd{Kind: quorum.AddTTL, Key: "k", Token: tok, Add: time.Minute, Limit: time.Minute}},
	{name: "AddTTL without expiry", setup: [][]any{set("k", tok)}, cmd: quorum.Cmd{Kind: quorum.AddTTL, Key: "k", Token: tok, Add: time.Minute, Limit: time.Minute}},
	{name: "ExtendOrSetNX held", setup: [][]any{set("k", tok, "5000")}, cmd: quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "ExtendOrSetNX absent", cmd: quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 2}, state: map[string]string{"k": tok}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "ExtendOrSetNX other", setup: [][]any{set("k", other, "5000")}, cmd: quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{N: 0}, state: map[string]string{"k": other}},
}

var multiCases = []redisDoCase{
	{name: "SetNXAll none present", cmd: quorum.Cmd{Kind: quorum.SetNXAll, Keys: []string{"a", "b"}, Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"a": tok, "b": tok}, pttlOver: map[string]time.Duration{"b": 50 * time.Second}},
	{name: "SetNXAll one present", setup: [][]any{set("b", other, min1)}, cmd: quorum.Cmd{Kind: quorum.SetNXAll, Keys: []string{"a", "b"}, Token: tok, TTL: time.Minute},
		state: map[string]string{"a": "", "b": other}},
	{name: "SetNXAll no keys", cmd: quorum.Cmd{Kind: quorum.SetNXAll, Token: tok, TTL: time.Minute}, wantErr: errNoKeys},
	{name: "ExtendAll all held", setup: [][]any{set("a", tok, "5000"), set("b", tok, "5000")}, cmd: quorum.Cmd{Kind: quorum.ExtendAll, Keys: []string{"a", "b"}, Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, pttlOver: map[string]time.Duration{"a": 50 * time.Second, "b": 50 * time.Second}},
	{name: "ExtendAll one other", setup: [][]any{set("a", tok, "5000"), set("b", other, "5000")}, cmd: quorum.Cmd{Kind: quorum.ExtendAll, Keys: []string{"a", "b"}, Token: tok, TTL: time.Minute}},
	{name: "ReleaseEach", setup: [][]any{set("a", tok, min1), set("b", other, min1), set(WaitKey("a"), "1", min1)},
		cmd:  quorum.Cmd{Kind: quorum.ReleaseEach, Keys: []string{"a", "b", "c"}, Token: tok},
		want: quorum.Reply{OK: true, Each: []bool{true, false, false}}, state: map[string]string{"a": "", "b": other}, published: "a"},
}

var heldCases = []redisDoCase{
	{name: "HoldOwner absent", cmd: quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: pfx, Token: pfx + "1", TTL: time.Minute},
		want: quorum.Reply{OK: true, Token: pfx + "1", N: 1}, state: map[string]string{"k": pfx + "1", mark: pfx + "1", holdsK: pfx + "1 1"}},
	{name: "HoldOwner reentry", setup: [][]any{set("k", pfx+"0", "5000")}, cmd: quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: pfx, Token: pfx + "1", TTL: time.Minute},
		want:  quorum.Reply{OK: true, Token: pfx + "0", N: 2},
		state: map[string]string{"k": pfx + "0", mark: pfx + "0", holdsK: pfx + "0 2"}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "HoldOwner other owner", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: pfx, Token: pfx + "1", TTL: time.Minute},
		state: map[string]string{"k": other, mark: ""}},
	{name: "HoldOwner undone round", setup: [][]any{set(mark, "-", min1)}, cmd: quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Mark: mark, Prefix: pfx, Token: pfx + "1", TTL: time.Minute},
		state: map[string]string{"k": ""}},
	{name: "UndoHold landed", setup: [][]any{set("k", pfx+"0", min1), set(holdsK, pfx+"0 2", min1), set(mark, pfx+"0", min1)},
		cmd:  quorum.Cmd{Kind: quorum.UndoHold, Key: "k", Mark: mark, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": pfx + "0", holdsK: pfx + "0 1", mark: "-"}},
	{name: "UndoHold last, marked", setup: [][]any{set("k", pfx+"0", min1), set(mark, pfx+"0", min1), set(wk, "1", min1)},
		cmd:  quorum.Cmd{Kind: quorum.UndoHold, Key: "k", Mark: mark, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": "", mark: "-"}, published: "k"},
	{name: "UndoHold not arrived, keep", cmd: quorum.Cmd{Kind: quorum.UndoHold, Key: "k", Mark: mark, Token: pfx + "9", TTL: time.Minute},
		state: map[string]string{mark: "?" + pfx + "9"}},
	{name: "UndoHold kept token", setup: [][]any{set("k", pfx+"9", min1), set(mark, pfx+"9", min1)},
		cmd: quorum.Cmd{Kind: quorum.UndoHold, Key: "k", Mark: mark, Token: pfx + "9", TTL: time.Minute}, state: map[string]string{"k": pfx + "9"}},
	{name: "Unhold one of two", setup: [][]any{set("k", tok, min1), set(holdsK, tok+" 2", min1)}, cmd: quorum.Cmd{Kind: quorum.Unhold, Key: "k", Token: tok},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": tok, holdsK: tok + " 1"}},
	{name: "Unhold last, marked", setup: [][]any{set("k", tok, min1), set(wk, "1", min1)}, cmd: quorum.Cmd{Kind: quorum.Unhold, Key: "k", Token: tok},
		want: quorum.Reply{OK: true, N: 0}, state: map[string]string{"k": ""}, published: "k"},
	{name: "Unhold other", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.Unhold, Key: "k", Token: tok}, state: map[string]string{"k": other}},
	{name: "ExtendHeld never shortens", setup: [][]any{set("k", tok, "5000"), set(holdsK, tok+" 2", "90000")},
		cmd:  quorum.Cmd{Kind: quorum.ExtendHeld, Key: "k", Token: tok, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, pttlOver: map[string]time.Duration{"k": 50 * time.Second, holdsK: 80 * time.Second}},
	{name: "ExtendHeld other", setup: [][]any{set("k", other, "5000")}, cmd: quorum.Cmd{Kind: quorum.ExtendHeld, Key: "k", Token: tok, TTL: time.Minute}},
	{name: "RestoreHeld one hold", cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: "k", Token: tok, N: 1, TTL: time.Minute},
		want: quorum.Reply{OK: true}, state: map[string]string{"k": tok, holdsK: ""}, pttlOver: map[string]time.Duration{"k": 50 * time.Second}},
	{name: "RestoreHeld three holds", cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: "k", Token: tok, N: 3, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, state: map[string]string{"k": tok, holdsK: quorum.FormatHolds(tok, 3)},
		pttlOver: map[string]time.Duration{"k": 50 * time.Second, holdsK: 50 * time.Second}},
	{name: "RestoreHeld present", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: "k", Token: tok, N: 3, TTL: time.Minute},
		state: map[string]string{"k": other, holdsK: ""}},
	{name: "RestoreHeld present, one hold", setup: [][]any{set("k", other, min1)}, cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: "k", Token: tok, N: 1, TTL: time.Minute},
		state: map[string]string{"k": other}},
}

var fenceCases = []redisDoCase{
	{name: "ReadFence absent", cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}},
	{name: "ReadFence present", setup: [][]any{set("f", "42")}, cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}, want: quorum.Reply{OK: true, N: 42}},
	{name: "ReadFence at MaxFence", setup: [][]any{set("f", "9007199254740992")}, cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"},
		want: quorum.Reply{OK: true, N: quorum.MaxFence}},
	{name: "ReadFence not a number", setup: [][]any{set("f", "4x")}, cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}, wantErr: quorum.ErrBadFence},
	{name: "ReadFence negative", setup: [][]any{set("f", "-1")}, cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}, wantErr: quorum.ErrBadFence},
	{name: "ReadFence past MaxFence", setup: [][]any{set("f", "9007199254740993")}, cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: "f"}, wantErr: quorum.ErrBadFence},
	{name: "RaiseFence absent", cmd: quorum.Cmd{Kind: quorum.RaiseFence, Key: "f", N: 5, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 5}, state: map[string]string{"f": "5"}, pttlOver: map[string]time.Duration{"f": 50 * time.Second}},
	{name: "RaiseFence below", setup: [][]any{set("f", "10")}, cmd: quorum.Cmd{Kind: quorum.RaiseFence, Key: "f", N: 5, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 10}, state: map[string]string{"f": "10"}, pttlOver: map[string]time.Duration{"f": 50 * time.Second}},
	{name: "RaiseFence over a bad counter", setup: [][]any{set("f", "x")}, cmd: quorum.Cmd{Kind: quorum.RaiseFence, Key: "f", N: 5, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 5}, state: map[string]string{"f": "5"}},
	{name: "unknown kind", cmd: quorum.Cmd{Kind: 200, Key: "f"}, wantErr: errUnknownKind},
}

func TestRedisDoLock(t *testing.T)   { runDoCases(t, lockCases) }
func TestRedisDoMulti(t *testing.T)  { runDoCases(t, multiCases) }
func TestRedisDoHeld(t *testing.T)   { runDoCases(t, heldCases) }
func TestRedisDoFences(t *testing.T) { runDoCases(t, fenceCases) }

func runDoCases(t *testing.T, cases []redisDoCase) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ps := c.Subscribe(t.Context(), releaseChannel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the subscribe confirmation
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			for _, args := range tc.setup {
				if err := c.Do(t.Context(), args...).Err(); err != nil {
					t.Fatalf("setup %v: %v", args, err)
				}
			}
			got := quorum.Call(t.Context(), r, tc.cmd)
			checkRedisReply(t, tc, got)
			checkState(t, c, tc)
			checkPublished(t, c, ps, tc.published)
		})
	}
}

func checkRedisReply(t *testing.T, tc redisDoCase, got quorum.Reply) {
	t.Helper()
	if tc.wantErr != nil {
		if !errors.Is(got.Err, tc.wantErr) {
			t.Fatalf("err = %v, want %v", got.Err, tc.wantErr)
		}
		return
	}
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	ttl := got.TTL
	if tc.ttlOver > 0 {
		if ttl <= tc.ttlOver || ttl > tc.cmd.TTL+tc.cmd.Limit+time.Minute {
			t.Fatalf("TTL = %v, want over %v", ttl, tc.ttlOver)
		}
		ttl = 0
	}
	w := tc.want
	if got.OK != w.OK || got.Token != w.Token || ttl != w.TTL || got.N != w.N || !slices.Equal(got.Each, w.Each) {
		t.Fatalf("reply = %+v, want %+v", got, w)
	}
}

func checkState(t *testing.T, c *redis.Client, tc redisDoCase) {
	t.Helper()
	redistest.CheckStrings(t, c, tc.state)
	for k, over := range tc.pttlOver {
		if p := c.PTTL(t.Context(), k).Val(); p <= over {
			t.Errorf("pttl of %s = %v, want over %v", k, p, over)
		}
	}
}

// checkPublished reads the next announcement after a marker published by
// the test itself: an announcement of the command comes before it.
func checkPublished(t *testing.T, c *redis.Client, ps *redis.PubSub, want string) {
	t.Helper()
	const marker = "marker"
	if err := c.Publish(t.Context(), releaseChannel, marker).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), pollBound)
	defer cancel()
	var got []string
	for len(got) == 0 || got[len(got)-1] != marker {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Payload)
	}
	if want := append(slices.DeleteFunc([]string{want}, func(s string) bool { return s == "" }), marker); !slices.Equal(got, want) {
		t.Fatalf("announced %q, want %q", got, want)
	}
}
