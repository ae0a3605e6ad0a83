package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartClusterServesEverySlot(t *testing.T) {
	c := StartCluster(t, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, m := range c.Masters {
		slot := i * Slots / 3
		c.WaitMaster(t, slot, m)
	}
	for i, r := range c.Replicas {
		info, err := r.Client().Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !contains(info, "role:slave") || !contains(info, ":"+itoa(c.Masters[i].Port())+"\r\n") {
			t.Fatalf("replica %d does not copy master %d:\n%s", i, i, info)
		}
	}
}

func TestMigrateSlotMovesKeys(t *testing.T) {
	c := StartCluster(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// "foo" hashes to slot 12182, which the second master serves.
	from, to := c.Masters[1], c.Masters[0]
	if err := from.Client().Set(ctx, "foo", "bar", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.MigrateSlot(t, 12182, from, to)
	c.WaitMaster(t, 12182, to)
	if v, err := to.Client().Get(ctx, "foo").Result(); err != nil || v != "bar" {
		t.Fatalf("GET foo on the new master: %q, %v", v, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
func itoa(n int) string           { return strconv.Itoa(n) }

// A node that gets no answer to its handshake within the handshake
// timeout drops it, and the node that answers late then knows the first
// while not known back: only a MEET makes a node take an unknown one in,
// and in a cluster of two no gossip names it. join sends the MEET again.
func TestJoinHealsADroppedHandshake(t *testing.T) {
	a, b := startClusterServer(t, nil), startClusterServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	idA, idB := a.NodeID(t), b.NodeID(t)
	b.Stop()
	mustDo(t, ctx, a, "cluster", "meet", "127.0.0.1", b.Port(), b.busPort())
	settle(t, ctx, "a to drop its handshake with the stopped b", func(ctx context.Context) []string {
		if v, err := readNodes(ctx, a); err != nil || len(v.nodes) != 1 {
			return []string{fmt.Sprintf("a's view: %v, %v", v.nodes, err)}
		}
		return nil
	})
	b.Cont()
	// b reads the MEET that waited in its socket and completes a
	// handshake of its own with a.
	settle(t, ctx, "b to know a", func(ctx context.Context) []string {
		if v, err := readNodes(ctx, b); err != nil || !v.knows(idA) {
			return []string{fmt.Sprintf("b's view: %v, %v", v.nodes, err)}
		}
		return nil
	})
	if v, err := readNodes(ctx, a); err != nil || v.knows(idB) {
		t.Fatalf("a knows b without a second MEET: %v, %v", v.nodes, err)
	}
	join(t, ctx, []*Server{a, b})
}

func TestParseNodes(t *testing.T) {
	text := "" +
		"07c3 127.0.0.1:30004@31004,host slave e7d1 0 1426238317239 4 connected\n" +
		"67ed 127.0.0.1:30002@31002 master,fail - 0 1426238316232 2 connected 5461-10922\n" +
		"e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-67ed]\n" +
		"6ec2 127.0.0.1:30005@31005 handshake - 0 0 0 disconnected\n" +
		"824f :0@0 master,noaddr - 0 0 3 disconnected 10923\n"
	v, err := parseNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if v.self.id != "e7d1" || v.self.port != 30001 || strings.Join(v.self.slots, " ") != "0-5460" {
		t.Fatalf("self %+v", v.self)
	}
	if e := v.nodes["07c3"]; e.master != "e7d1" || !e.has("slave") || e.port != 30004 {
		t.Fatalf("replica %+v", e)
	}
	for id, want := range map[string]bool{"07c3": true, "67ed": true, "e7d1": true, "6ec2": false, "824f": false, "0000": false} {
		if v.knows(id) != want {
			t.Errorf("knows(%s) = %v, want %v", id, !want, want)
		}
	}
	if slotRange(10923, 10923) != "10923" || slotRange(0, 5460) != "0-5460" {
		t.Fatal("slotRange")
	}
}
