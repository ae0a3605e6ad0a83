package embedded

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// memDoCase is one command on a fresh in-memory node whose clock stands
// still: before runs first (each must not fail), then cmd, whose reply must
// equal want (Err by errors.Is). after gives keys' values afterwards ("":
// absent), ttls their remaining ttls.
type memDoCase struct {
	name   string
	before []quorum.Cmd
	cmd    quorum.Cmd
	want   quorum.Reply
	after  map[string]string
	ttls   map[string]time.Duration
}

const (
	memK  = "k"
	memK2 = "k2"
)

var memKHolds = quorum.HoldsKey(memK)

func memSetNX(key, token string, ttl time.Duration) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl}
}

func memHoldOwner(mark, token string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.HoldOwner, Key: memK, Mark: mark, Prefix: "o:", Token: token, TTL: time.Minute}
}

var memDoCases = []memDoCase{
	{name: "SetNX absent", cmd: memSetNX(memK, "a", time.Minute),
		want: quorum.Reply{OK: true}, after: map[string]string{memK: "a"}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "SetNX held", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)}, cmd: memSetNX(memK, "b", time.Minute),
		after: map[string]string{memK: "a", backend.WaitKey(memK): ""}},
	{name: "SetNX held marks", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
		cmd:   quorum.Cmd{Kind: quorum.SetNX, Key: memK, Token: "b", TTL: time.Minute, Add: 5 * time.Second},
		after: map[string]string{memK: "a", backend.WaitKey(memK): "1"}, ttls: map[string]time.Duration{backend.WaitKey(memK): 5 * time.Second}},
	{name: "SetNX mark never shortened", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute),
		{Kind: quorum.SetNX, Key: memK, Token: "b", TTL: time.Minute, Add: 9 * time.Second}},
		cmd:  quorum.Cmd{Kind: quorum.SetNX, Key: memK, Token: "c", TTL: time.Minute, Add: time.Second},
		ttls: map[string]time.Duration{backend.WaitKey(memK): 9 * time.Second}},
	{name: "SetNX absent leaves no mark", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: memK, Token: "a", TTL: time.Minute, Add: time.Second},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "a", backend.WaitKey(memK): ""}},
	{name: "SetNX zero ttl", cmd: memSetNX(memK, "a", 0), want: quorum.Reply{Err: backend.ErrInvalidTTL}, after: map[string]string{memK: ""}},
	{name: "SetNX negative mark", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: memK, Token: "a", TTL: time.Second, Add: -1},
		want: quorum.Reply{Err: backend.ErrInvalidTTL}},
	{name: "Set overrides", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
		cmd:  quorum.Cmd{Kind: quorum.Set, Key: memK, Token: "b", TTL: time.Second},
		want: quorum.Reply{OK: true}, after: map[string]string{memK: "b"}, ttls: map[string]time.Duration{memK: time.Second}},
	{name: "CompareAndDelete absent", cmd: quorum.Cmd{Kind: quorum.CompareAndDelete, Key: memK, Token: "a"},
		want: quorum.Reply{N: -1}},
	{name: "CompareAndDelete other", before: []quorum.Cmd{memSetNX(memK, "b", time.Minute)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndDelete, Key: memK, Token: "a"},
		want: quorum.Reply{N: 0}, after: map[string]string{memK: "b"}},
	{name: "CompareAndDelete own", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndDelete, Key: memK, Token: "a"},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: ""}},
	{name: "CompareAndExtend own", before: []quorum.Cmd{memSetNX(memK, "a", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndExtend, Key: memK, Token: "a", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "CompareAndExtend other", before: []quorum.Cmd{memSetNX(memK, "b", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.CompareAndExtend, Key: memK, Token: "a", TTL: time.Minute},
		ttls: map[string]time.Duration{memK: time.Second}},
	{name: "CompareAndExtend absent", cmd: quorum.Cmd{Kind: quorum.CompareAndExtend, Key: memK, Token: "a", TTL: time.Minute},
		after: map[string]string{memK: ""}},
	{name: "Get present", before: []quorum.Cmd{memSetNX(memK, "a", 7*time.Second)}, cmd: quorum.Cmd{Kind: quorum.Get, Key: memK},
		want: quorum.Reply{OK: true, Token: "a", TTL: 7 * time.Second}},
	{name: "Get absent", cmd: quorum.Cmd{Kind: quorum.Get, Key: memK}},
	{name: "Delete present", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)}, cmd: quorum.Cmd{Kind: quorum.Delete, Key: memK},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: ""}},
	{name: "Delete absent", cmd: quorum.Cmd{Kind: quorum.Delete, Key: memK}},
	{name: "Expire present", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
		cmd:  quorum.Cmd{Kind: quorum.Expire, Key: memK, TTL: time.Second},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "a"}, ttls: map[string]time.Duration{memK: time.Second}},
	{name: "Expire absent", cmd: quorum.Cmd{Kind: quorum.Expire, Key: memK, TTL: time.Second}, after: map[string]string{memK: ""}},
	{name: "Expire zero ttl", before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)},
		cmd: quorum.Cmd{Kind: quorum.Expire, Key: memK}, want: quorum.Reply{Err: backend.ErrInvalidTTL}, after: map[string]string{memK: "a"}},
	{name: "AddTTL adds", before: []quorum.Cmd{memSetNX(memK, "a", 10*time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.AddTTL, Key: memK, Token: "a", Add: 5 * time.Second, Limit: time.Minute},
		want: quorum.Reply{OK: true, TTL: 15 * time.Second}, ttls: map[string]time.Duration{memK: 15 * time.Second}},
	{name: "AddTTL capped", before: []quorum.Cmd{memSetNX(memK, "a", 10*time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.AddTTL, Key: memK, Token: "a", Add: 5 * time.Second, Limit: 12 * time.Second},
		want: quorum.Reply{OK: true, TTL: 12 * time.Second}, ttls: map[string]time.Duration{memK: 12 * time.Second}},
	{name: "AddTTL other", before: []quorum.Cmd{memSetNX(memK, "b", 10*time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.AddTTL, Key: memK, Token: "a", Add: 5 * time.Second, Limit: time.Minute},
		ttls: map[string]time.Duration{memK: 10 * time.Second}},
	{name: "AddTTL no limit", cmd: quorum.Cmd{Kind: quorum.AddTTL, Key: memK, Token: "a", Add: time.Second},
		want: quorum.Reply{Err: backend.ErrInvalidTTL}},
	{name: "ExtendOrSetNX absent", cmd: quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: memK, Token: "a", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 2}, after: map[string]string{memK: "a"}},
	{name: "ExtendOrSetNX own", before: []quorum.Cmd{memSetNX(memK, "a", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: memK, Token: "a", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "ExtendOrSetNX other", before: []quorum.Cmd{memSetNX(memK, "b", time.Second)},
		cmd:   quorum.Cmd{Kind: quorum.ExtendOrSetNX, Key: memK, Token: "a", TTL: time.Minute},
		after: map[string]string{memK: "b"}, ttls: map[string]time.Duration{memK: time.Second}},
	{name: "SetNXAll free", cmd: quorum.Cmd{Kind: quorum.SetNXAll, Keys: []string{memK, memK2}, Token: "a", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "a", memK2: "a"}},
	{name: "SetNXAll one held", before: []quorum.Cmd{memSetNX(memK2, "b", time.Minute)},
		cmd:   quorum.Cmd{Kind: quorum.SetNXAll, Keys: []string{memK, memK2}, Token: "a", TTL: time.Minute},
		after: map[string]string{memK: "", memK2: "b"}},
	{name: "ExtendAll all own", before: []quorum.Cmd{memSetNX(memK, "a", time.Second), memSetNX(memK2, "a", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.ExtendAll, Keys: []string{memK, memK2}, Token: "a", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, ttls: map[string]time.Duration{memK: time.Minute, memK2: time.Minute}},
	{name: "ExtendAll one missing", before: []quorum.Cmd{memSetNX(memK, "a", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.ExtendAll, Keys: []string{memK, memK2}, Token: "a", TTL: time.Minute},
		ttls: map[string]time.Duration{memK: time.Second}},
	{name: "ReleaseEach", before: []quorum.Cmd{memSetNX(memK, "a", time.Second), memSetNX(memK2, "b", time.Second)},
		cmd:  quorum.Cmd{Kind: quorum.ReleaseEach, Keys: []string{memK, memK2, "k3"}, Token: "a"},
		want: quorum.Reply{OK: true, Each: []bool{true, false, false}}, after: map[string]string{memK: "", memK2: "b"}},
	{name: "HoldOwner absent", cmd: memHoldOwner("m1", "o:1"),
		want:  quorum.Reply{OK: true, Token: "o:1", N: 1},
		after: map[string]string{memK: "o:1", memKHolds: "o:1 1", "m1": "o:1"}},
	{name: "HoldOwner reenters", before: []quorum.Cmd{memHoldOwner("m1", "o:1")}, cmd: memHoldOwner("m2", "o:2"),
		want:  quorum.Reply{OK: true, Token: "o:1", N: 2},
		after: map[string]string{memK: "o:1", memKHolds: "o:1 2", "m2": "o:1"}},
	{name: "HoldOwner repeat", before: []quorum.Cmd{memHoldOwner("m1", "o:1")}, cmd: memHoldOwner("m1", "o:1"),
		want: quorum.Reply{OK: true, Token: "o:1", N: 1}, after: map[string]string{memKHolds: "o:1 1"}},
	{name: "HoldOwner other owner", before: []quorum.Cmd{memSetNX(memK, "p:1", time.Minute)}, cmd: memHoldOwner("m1", "o:1"),
		after: map[string]string{memK: "p:1", "m1": ""}},
	{name: "HoldOwner after its undo",
		before: []quorum.Cmd{{Kind: quorum.UndoHold, Key: memK, Mark: "m1", TTL: time.Minute}}, cmd: memHoldOwner("m1", "o:1"),
		after: map[string]string{memK: "", "m1": "-"}},
	{name: "HoldOwner undone but kept",
		before: []quorum.Cmd{memHoldOwner("m0", "o:0"), {Kind: quorum.UndoHold, Key: memK, Mark: "m1", Token: "o:0", TTL: time.Minute}},
		cmd:    memHoldOwner("m1", "o:1"), want: quorum.Reply{OK: true, Token: "o:0", N: 2},
		after: map[string]string{memK: "o:0", memKHolds: "o:0 2"}},
	{name: "UndoHold takes back", before: []quorum.Cmd{memHoldOwner("m1", "o:1"), memHoldOwner("m2", "o:2")},
		cmd:  quorum.Cmd{Kind: quorum.UndoHold, Key: memK, Mark: "m2", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "o:1", memKHolds: "o:1 1", "m2": "-"}},
	{name: "UndoHold last hold", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd:  quorum.Cmd{Kind: quorum.UndoHold, Key: memK, Mark: "m1", TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "", memKHolds: ""}},
	{name: "UndoHold keeps the granted token", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd:   quorum.Cmd{Kind: quorum.UndoHold, Key: memK, Mark: "m1", Token: "o:1", TTL: time.Minute},
		after: map[string]string{memK: "o:1", memKHolds: "o:1 1", "m1": "o:1"}},
	{name: "UndoHold before the round", cmd: quorum.Cmd{Kind: quorum.UndoHold, Key: memK, Mark: "m1", Token: "o:0", TTL: time.Minute},
		after: map[string]string{"m1": "?" + "o:0"}, ttls: map[string]time.Duration{"m1": time.Minute}},
	{name: "Unhold one of two", before: []quorum.Cmd{memHoldOwner("m1", "o:1"), memHoldOwner("m2", "o:2")},
		cmd:  quorum.Cmd{Kind: quorum.Unhold, Key: memK, Token: "o:1"},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "o:1", memKHolds: "o:1 1"}},
	{name: "Unhold last", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd:  quorum.Cmd{Kind: quorum.Unhold, Key: memK, Token: "o:1"},
		want: quorum.Reply{OK: true, N: 0}, after: map[string]string{memK: "", memKHolds: ""}},
	{name: "Unhold other token", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd: quorum.Cmd{Kind: quorum.Unhold, Key: memK, Token: "o:9"}, after: map[string]string{memK: "o:1"}},
	{name: "ExtendHeld raises", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd:  quorum.Cmd{Kind: quorum.ExtendHeld, Key: memK, Token: "o:1", TTL: time.Hour},
		want: quorum.Reply{OK: true, N: 1}, ttls: map[string]time.Duration{memK: time.Hour, memKHolds: time.Hour}},
	{name: "ExtendHeld never shortens", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd:  quorum.Cmd{Kind: quorum.ExtendHeld, Key: memK, Token: "o:1", TTL: time.Second},
		want: quorum.Reply{OK: true, N: 1}, ttls: map[string]time.Duration{memK: time.Minute, memKHolds: time.Minute}},
	{name: "ExtendHeld other", before: []quorum.Cmd{memHoldOwner("m1", "o:1")},
		cmd: quorum.Cmd{Kind: quorum.ExtendHeld, Key: memK, Token: "o:9", TTL: time.Hour}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "RestoreHeld absent", cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: memK, Token: "o:1", N: 3, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 1}, after: map[string]string{memK: "o:1", memKHolds: "o:1 3"}},
	{name: "RestoreHeld one hold", cmd: quorum.Cmd{Kind: quorum.RestoreHeld, Key: memK, Token: "o:1", N: 1, TTL: time.Minute},
		want: quorum.Reply{OK: true}, after: map[string]string{memK: "o:1", memKHolds: ""}},
	{name: "RestoreHeld present", before: []quorum.Cmd{memSetNX(memK, "b", time.Minute)},
		cmd:   quorum.Cmd{Kind: quorum.RestoreHeld, Key: memK, Token: "o:1", N: 3, TTL: time.Minute},
		after: map[string]string{memK: "b", memKHolds: ""}},
	{name: "ReadFence absent", cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: memK}},
	{name: "ReadFence value", before: []quorum.Cmd{{Kind: quorum.Set, Key: memK, Token: "42", TTL: time.Minute}},
		cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: memK}, want: quorum.Reply{OK: true, N: 42}},
	{name: "ReadFence malformed", before: []quorum.Cmd{{Kind: quorum.Set, Key: memK, Token: "-1", TTL: time.Minute}},
		cmd: quorum.Cmd{Kind: quorum.ReadFence, Key: memK}, want: quorum.Reply{Err: quorum.ErrBadFence}},
	{name: "RaiseFence raises", before: []quorum.Cmd{{Kind: quorum.Set, Key: memK, Token: "4", TTL: time.Second}},
		cmd:  quorum.Cmd{Kind: quorum.RaiseFence, Key: memK, N: 9, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 9}, after: map[string]string{memK: "9"}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "RaiseFence keeps a larger one", before: []quorum.Cmd{{Kind: quorum.Set, Key: memK, Token: "12", TTL: time.Second}},
		cmd:  quorum.Cmd{Kind: quorum.RaiseFence, Key: memK, N: 9, TTL: time.Minute},
		want: quorum.Reply{OK: true, N: 12}, after: map[string]string{memK: "12"}, ttls: map[string]time.Duration{memK: time.Minute}},
	{name: "RaiseFence overwrites a malformed one", before: []quorum.Cmd{{Kind: quorum.Set, Key: memK, Token: "x", TTL: time.Second}},
		cmd: quorum.Cmd{Kind: quorum.RaiseFence, Key: memK, N: 3, TTL: time.Minute}, want: quorum.Reply{OK: true, N: 3}, after: map[string]string{memK: "3"}},
	{name: "Eval", cmd: quorum.Cmd{Kind: quorum.Eval, Script: nodetest.Script(`return redis.call('set', KEYS[1], ARGV[1], 'PX', 5000)`), Keys: []string{memK}, Args: []string{"v"}},
		want:  quorum.Reply{OK: true, Value: &quorum.Value{Kind: quorum.StatusValue, Str: "OK"}, TTL: 5 * time.Second},
		after: map[string]string{memK: "v"}, ttls: map[string]time.Duration{memK: 5 * time.Second}},
	{name: "Eval marked without a ttl", cmd: quorum.Cmd{Kind: quorum.Eval, Script: nodetest.Script(`return redis.call('del', KEYS[1])`), Keys: []string{memK}, Mark: "m1"},
		before: []quorum.Cmd{memSetNX(memK, "a", time.Minute)}, want: quorum.Reply{Err: backend.ErrInvalidTTL}, after: map[string]string{memK: "a"}},
	{name: "Eval without a script", cmd: quorum.Cmd{Kind: quorum.Eval, Keys: []string{memK}}, want: quorum.Reply{Err: errAnyMem}},
	{name: "UndoEval", before: []quorum.Cmd{memSetNX(memK, "a", 7*time.Second),
		{Kind: quorum.Eval, Script: nodetest.Script(`return redis.call('del', KEYS[1])`), Keys: []string{memK}, Mark: "m1", TTL: time.Minute}},
		cmd:  quorum.Cmd{Kind: quorum.UndoEval, Keys: []string{memK}, Mark: "m1"},
		want: quorum.Reply{OK: true}, after: map[string]string{memK: "a"}, ttls: map[string]time.Duration{memK: 7 * time.Second}},
	{name: "UndoEval unknown mark", cmd: quorum.Cmd{Kind: quorum.UndoEval, Keys: []string{memK}, Mark: "m1"}},
	{name: "ForgetEval", before: []quorum.Cmd{memSetNX(memK, "a", 7*time.Second),
		{Kind: quorum.Eval, Script: nodetest.Script(`return redis.call('del', KEYS[1])`), Keys: []string{memK}, Mark: "m1", TTL: time.Minute}},
		cmd: quorum.Cmd{Kind: quorum.ForgetEval, Keys: []string{memK}, Mark: "m1"}, want: quorum.Reply{OK: true}},
	{name: "unknown kind", cmd: quorum.Cmd{Kind: 0, Key: memK}, want: quorum.Reply{Err: errAnyMem}},
}

// errAnyMem in a wanted reply accepts any error.
var errAnyMem = errors.New("any error")

func TestMemoryDo(t *testing.T) {
	for _, tc := range memDoCases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory(t) // the clock stands still: ttls are exact
			for i, c := range tc.before {
				if r := quorum.Call(t.Context(), m, c); r.Err != nil {
					t.Fatalf("before[%d]: %v", i, r.Err)
				}
			}
			got := quorum.Call(t.Context(), m, tc.cmd)
			checkMemReply(t, got, tc.want)
			checkMemKeys(t, m, tc.after, tc.ttls)
		})
	}
}

func checkMemReply(t *testing.T, got, want quorum.Reply) {
	t.Helper()
	switch {
	case want.Err == errAnyMem && got.Err == nil,
		want.Err != errAnyMem && !errors.Is(got.Err, want.Err),
		want.Err == nil && got.Err != nil:
		t.Fatalf("err = %v, want %v", got.Err, want.Err)
	}
	got.Err, want.Err = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reply = %+v, want %+v", got, want)
	}
}

// checkMemKeys reads the node's keys directly, so that a wrong step cannot
// hide behind a wrong Get.
func checkMemKeys(t *testing.T, m *Memory, vals map[string]string, ttls map[string]time.Duration) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, want := range vals {
		if e, _, _ := m.lookup(k, now); e.token != want {
			t.Errorf("%s = %q, want %q", k, e.token, want)
		}
	}
	for k, want := range ttls {
		e, _, ok := m.lookup(k, now)
		if got := e.expires.Sub(now); !ok || got != want {
			t.Errorf("%s: ttl %v (present %v), want %v", k, got, ok, want)
		}
	}
}

// TestMemoryKindTableComplete: every command kind has a row and a case.
func TestMemoryKindTableComplete(t *testing.T) {
	for k := quorum.SetNX; k <= quorum.UndoEval; k++ {
		if !backend.KnownKind(k) {
			t.Errorf("kind %d has no row in kinds", k)
			continue
		}
		if !slices.ContainsFunc(memDoCases, func(c memDoCase) bool { return c.cmd.Kind == k }) {
			t.Errorf("kind %s has no case in memDoCases", backend.KindName(k))
		}
	}
}

// TestMemoryCallsByKindName: a wrapped node's Calls counts each kind
// under its old method name, also when the call fails.
func TestMemoryCallsByKindName(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	quorum.Call(t.Context(), f, quorum.Cmd{Kind: quorum.AddTTL, Key: memK})
	quorum.Call(t.Context(), f, memSetNX(memK, "a", time.Second))
	f.SetFault(errors.New("down"))
	quorum.Call(t.Context(), f, memSetNX(memK, "a", time.Second))
	if got := f.Calls("CompareAndAddTTL"); got != 1 {
		t.Errorf("Calls(CompareAndAddTTL) = %d, want 1", got)
	}
	if got := f.Calls("SetNX"); got != 2 {
		t.Errorf("Calls(SetNX) = %d, want 2", got)
	}
}

// TestMemoryDoAnswersBeforeReturning: the receiver has its reply when Do
// returns.
func TestMemoryDoAnswersBeforeReturning(t *testing.T) {
	m, _ := newTestMemory(t)
	var got *quorum.Reply
	m.Do(time.Now().Add(time.Minute), memSetNX(memK, "a", time.Second), quorum.ReceiverFunc(func(r quorum.Reply) { got = &r }))
	if got == nil || !got.OK || got.Err != nil {
		t.Fatalf("reply when Do returned = %+v, want OK", got)
	}
}

func TestMemoryDoErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		setup    func(f *faultnode.Node)
		deadline time.Time
		want     error
	}{
		{"fault", func(f *faultnode.Node) { f.SetFault(boom) }, time.Now().Add(time.Minute), boom},
		{"closed", func(f *faultnode.Node) { _ = f.Close() }, time.Now().Add(time.Minute), backend.ErrClosed},
		{"deadline passed", nil, time.Now().Add(-time.Millisecond), context.DeadlineExceeded},
		{"delay past the deadline", func(f *faultnode.Node) { f.SetDelay(time.Hour) }, time.Now().Add(20 * time.Millisecond), context.DeadlineExceeded},
		{"delayed fault", func(f *faultnode.Node) { f.SetDelay(time.Millisecond); f.SetFault(boom) }, time.Now().Add(time.Minute), boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory(t)
			f := faultnode.Wrap(m)
			if tc.setup != nil {
				tc.setup(f)
			}
			got := memReceive(t, f, tc.deadline, memSetNX(memK, "a", time.Minute))
			if !errors.Is(got.Err, tc.want) || got.OK {
				t.Fatalf("reply = %+v, want error %v", got, tc.want)
			}
			f.SetDelay(0)
			f.SetFault(nil)
			if r := quorum.Call(t.Context(), f, quorum.Cmd{Kind: quorum.Get, Key: memK}); r.OK {
				t.Fatalf("the failed SetNX stored %q", r.Token)
			}
		})
	}
}

// TestMemoryDoDelayed: with a delay, Do returns at once and the reply
// comes later, with the command done.
func TestMemoryDoDelayed(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	f.SetDelay(10 * time.Millisecond)
	got := memReceive(t, f, time.Now().Add(time.Minute), memSetNX(memK, "a", time.Minute))
	if !got.OK || got.Err != nil {
		t.Fatalf("delayed SetNX = %+v, want OK", got)
	}
	f.SetDelay(0)
	if r := quorum.Call(t.Context(), f, quorum.Cmd{Kind: quorum.Get, Key: memK}); r.Token != "a" {
		t.Fatalf("after the delayed SetNX the key holds %q, want a", r.Token)
	}
}

// receive runs Do and waits for its one reply; Do itself must return
// first, before the reply of a delayed node, whose timer is an hour away
// at worst.
func memReceive(t *testing.T, n quorum.Node, deadline time.Time, c quorum.Cmd) quorum.Reply {
	t.Helper()
	ch := make(chan quorum.Reply, 2)
	n.Do(deadline, c, quorum.ReceiverFunc(func(r quorum.Reply) { ch <- r }))
	select {
	case r := <-ch:
		select {
		case extra := <-ch:
			t.Fatalf("a second reply: %+v", extra)
		default:
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply within 10s")
		return quorum.Reply{}
	}
}

// TestMemoryWatchAnnouncesMarkedReleases: Watch reports no server, and a
// release is announced only where it notifies and a waiter marked the key.
func TestMemoryWatchAnnouncesMarkedReleases(t *testing.T) {
	m, _ := newTestMemory(t)
	var heard []string
	if m.Watch(quorum.Watcher{Released: func(_ int, k string) { heard = append(heard, k) }}) {
		t.Fatal("Watch = true: an in-memory node has no server to identify")
	}
	marked := func(key string) {
		t.Helper()
		for _, c := range []quorum.Cmd{memSetNX(key, "a", time.Minute), {Kind: quorum.SetNX, Key: key, Token: "b", TTL: time.Minute, Add: time.Minute}} {
			if r := quorum.Call(t.Context(), m, c); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	steps := []struct {
		name  string
		setup func()
		cmd   quorum.Cmd
		want  []string
	}{
		{"unmarked", func() { quorum.Call(t.Context(), m, memSetNX("u", "a", time.Minute)) },
			quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "u", Token: "a", Notify: true}, nil},
		{"marked without Notify", func() { marked("n") }, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "n", Token: "a"}, nil},
		{"marked", func() { marked("c") }, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "c", Token: "a", Notify: true}, []string{"c"}},
		{"marked delete", func() { marked("d") }, quorum.Cmd{Kind: quorum.Delete, Key: "d", Notify: true}, []string{"d"}},
		{"release each", func() { marked("e1"); quorum.Call(t.Context(), m, memSetNX("e2", "a", time.Minute)) },
			quorum.Cmd{Kind: quorum.ReleaseEach, Keys: []string{"e1", "e2"}, Token: "a"}, []string{"e1"}},
		{"last hold", func() {
			quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.HoldOwner, Key: "h", Mark: "hm", Prefix: "o:", Token: "o:1", TTL: time.Minute})
			quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.SetNX, Key: "h", Token: "x", TTL: time.Minute, Add: time.Minute})
		}, quorum.Cmd{Kind: quorum.Unhold, Key: "h", Token: "o:1"}, []string{"h"}},
	}
	for _, st := range steps {
		heard = nil
		st.setup()
		if r := quorum.Call(t.Context(), m, st.cmd); r.Err != nil {
			t.Fatalf("%s: %v", st.name, r.Err)
		}
		if !slices.Equal(heard, st.want) {
			t.Errorf("%s: announced %q, want %q", st.name, heard, st.want)
		}
	}
}

// TestMemoryDelayedKeepsOrder: delayed commands run in the order Do was
// called, even when a later one is given a shorter delay: a release never
// overtakes the SET it undoes.
func TestMemoryDelayedKeepsOrder(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	deadline := time.Now().Add(time.Minute)
	set, release := make(chan quorum.Reply, 1), make(chan quorum.Reply, 1)
	f.SetDelay(50 * time.Millisecond)
	f.Do(deadline, memSetNX(memK, "a", time.Minute), quorum.ReceiverFunc(func(r quorum.Reply) { set <- r }))
	f.SetDelay(time.Millisecond)
	f.Do(deadline, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: memK, Token: "a"}, quorum.ReceiverFunc(func(r quorum.Reply) { release <- r }))
	if r := <-set; !r.OK || r.Err != nil {
		t.Fatalf("SetNX = %+v", r)
	}
	if r := <-release; !r.OK || r.N != 1 {
		t.Fatalf("the release after the SetNX = %+v, want it deleted (N 1)", r)
	}
	f.SetDelay(0)
	if r := quorum.Call(t.Context(), f, quorum.Cmd{Kind: quorum.Get, Key: memK}); r.OK {
		t.Fatalf("the key outlived its release: %q", r.Token)
	}
}
