package proxy

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/raceflag"
)

// replayConn hands out the same requests over and over, one request per
// Read, and keeps the last reply written: a connection without a socket,
// so that only the proxy's own work is measured.
type replayConn struct {
	net.Conn // nil: only Read and Write are used
	reqs     [][]byte
	next     int
	out      []byte // the last write, or with keep every write
	keep     bool
}

func (c *replayConn) Read(p []byte) (int, error) {
	n := copy(p, c.reqs[c.next%len(c.reqs)])
	c.next++
	return n, nil
}

func (c *replayConn) Write(p []byte) (int, error) {
	if !c.keep {
		c.out = c.out[:0]
	}
	c.out = append(c.out, p...)
	return len(p), nil
}

// nopObserver stands for the metrics: production runs with one, and it
// costs the proxy a call's worth of bookkeeping.
type nopObserver struct{}

func (nopObserver) CommandDone(string, string, time.Duration, *quorum.Report) {}

// releaseSHA names the compare-and-delete release script (docs/commands.md, EVAL).
var releaseSHA = func() string {
	sum := sha1.Sum([]byte(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`))
	return hex.EncodeToString(sum[:])
}()

func request(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return resp.AppendCommand(nil, b)
}

// TestAllocsPerRequest guards the allocations the proxy adds to a lock
// request: reading and parsing it, looking it up, running the command up
// to the quorum call, and encoding and writing the reply. The quorum's own
// allocations (measured by calling the cluster directly, over in-memory
// nodes) are taken out, so the budget is the client path's alone. Each
// pair takes and gives back the same lock, so every run does the same
// work. The replayed connection is no socket, so a request alone runs on
// Run, whose quorum calls are the blocking ones taken out here; over a
// socket it is started (TestAllocsPerRequestOnSocket).
func TestAllocsPerRequest(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		reqs    [][]byte
		replies []string
		direct  func(c *quorum.Cluster)
		budget  float64
	}{{
		name:    "SET NX PX then EVALSHA release",
		reqs:    [][]byte{request("SET", "k", "tok", "NX", "PX", "10000"), request("EVALSHA", releaseSHA, "1", "k", "tok")},
		replies: []string{"+OK\r\n", ":1\r\n"},
		direct: func(c *quorum.Cluster) {
			c.Acquire(ctx, "k", "tok", 10*time.Second)
			c.Release(ctx, "k", "tok")
		},
		budget: 4,
	}, {
		name:    "LOCK then UNLOCK",
		reqs:    [][]byte{request("LOCK", "k", "10000", "TOKEN", "tok"), request("UNLOCK", "k", "tok")},
		replies: []string{"*2\r\n$3\r\ntok\r\n:", ":1\r\n"},
		direct: func(c *quorum.Cluster) {
			c.Acquire(ctx, "k", "tok", 10*time.Second)
			c.Release(ctx, "k", "tok")
		},
		budget: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := memoryCluster(t)
			s, st := replayServer(t, cluster, tc.reqs)
			pair := func() {
				for i := range tc.reqs {
					batch, err := st.rd.next()
					if err != nil || len(batch) != 1 {
						t.Fatalf("next = %d requests, %v", len(batch), err)
					}
					s.serveBatch(st, batch)
					if out := st.nc.(*replayConn).out; !bytes.HasPrefix(out, []byte(tc.replies[i])) {
						t.Fatalf("reply %q, want %q", out, tc.replies[i])
					}
				}
			}
			pair() // the buffers and the session's maps grow once
			proxied := testing.AllocsPerRun(200, pair)
			direct := testing.AllocsPerRun(200, func() { tc.direct(cluster) })
			own := proxied - direct
			t.Logf("%.1f allocations per pair through the proxy, %.1f in the quorum: %.1f its own", proxied, direct, own)
			if raceflag.Enabled {
				tc.budget += 2 // pooled records dropped at random
			}
			if own > tc.budget {
				t.Fatalf("the proxy allocates %.1f times per pair of its own, budget %.0f", own, tc.budget)
			}
		})
	}
}

func memoryCluster(t *testing.T) *quorum.Cluster { return memoryClusterB(t) }

func memoryClusterB(t testing.TB) *quorum.Cluster {
	t.Helper()
	var nodes []quorum.Node
	for i := range 3 {
		nodes = append(nodes, embedded.New(fmt.Sprintf("mem-%d", i+1)))
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second // a loaded machine must not turn these into tests of timeouts
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cluster.Close()
		for _, n := range nodes {
			n.Close()
		}
	})
	return cluster
}

// replayServer is a Server with one connection that replays reqs, as
// accept would set it up, without a listener.
func replayServer(t *testing.T, cluster *quorum.Cluster, reqs [][]byte) (*Server, *connState) {
	return replayServerB(t, cluster, reqs)
}

func replayServerB(t testing.TB, cluster *quorum.Cluster, reqs [][]byte) (*Server, *connState) {
	t.Helper()
	h := commands.New(cluster, commands.Options{Observer: nopObserver{}})
	s := New(h, Options{})
	nc := &replayConn{reqs: reqs}
	st := &connState{nc: nc, addr: "replay", sess: h.NewSession("replay"), rd: newReader(nc, 0, 0)}
	st.w = NewWriter(st.sess.Proto)
	st.sess.SetPush(st.push)
	t.Cleanup(func() { h.CloseSession(st.sess) })
	return s, st
}

// TestAllocsPerRequestOnSocket is TestAllocsPerRequest over a real
// loopback socket, so that reading from and writing to it are counted
// too. The client side allocates nothing: it writes prepared bytes and
// reads into a fixed buffer.
func TestAllocsPerRequestOnSocket(t *testing.T) {
	cluster := memoryCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(commands.New(cluster, commands.Options{Observer: nopObserver{}}), Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-srv.Ready()
	defer func() {
		srv.Close()
		<-served
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	reqs := [][]byte{request("SET", "k", "tok", "NX", "PX", "10000"), request("EVALSHA", releaseSHA, "1", "k", "tok")}
	replies := []string{"+OK\r\n", ":1\r\n"}
	buf := make([]byte, 64)
	pair := func() {
		for i, req := range reqs {
			if _, err := nc.Write(req); err != nil {
				t.Fatal(err)
			}
			n := 0
			for n < len(replies[i]) {
				m, err := nc.Read(buf[n:])
				if err != nil {
					t.Fatal(err)
				}
				n += m
			}
			if string(buf[:n]) != replies[i] {
				t.Fatalf("reply %q, want %q", buf[:n], replies[i])
			}
		}
	}
	pair()
	proxied := testing.AllocsPerRun(200, pair)
	direct := testing.AllocsPerRun(200, asyncDirect(cluster, []string{"k"}, "tok"))
	own := proxied - direct
	t.Logf("%.1f allocations per pair over the socket, %.1f in the quorum and nodes: %.1f the proxy's own", proxied, direct, own)
	budget := 0.0
	if raceflag.Enabled {
		budget = 4 // pooled records dropped at random
	}
	if own > budget {
		t.Fatalf("the proxy allocates %.1f times per pair of its own over a socket, budget %.0f", own, budget)
	}
}

// TestAllocsPerPipelinedRequest is TestAllocsPerRequest for a pipeline of
// 16 locks on different keys, then 16 releases, each batch started at once
// in its asynchronous form (no worker runs them).
func TestAllocsPerPipelinedRequest(t *testing.T) {
	const depth = 16
	var sets, releases []byte
	var setReplies, releaseReplies string
	keys := make([]string, depth)
	for i := range depth {
		k := fmt.Sprintf("k%d", i)
		keys[i] = k
		sets = append(sets, request("SET", k, "tok", "NX", "PX", "10000")...)
		releases = append(releases, request("EVALSHA", releaseSHA, "1", k, "tok")...)
		setReplies += "+OK\r\n"
		releaseReplies += ":1\r\n"
	}
	cluster := memoryCluster(t)
	s, st := replayServer(t, cluster, [][]byte{sets, releases})
	t.Cleanup(func() { close(s.work) }) // as Serve ends the workers
	round := func() {
		for _, want := range []string{setReplies, releaseReplies} {
			batch, err := st.rd.next()
			if err != nil || len(batch) != depth {
				t.Fatalf("next = %d requests, %v", len(batch), err)
			}
			s.serveBatch(st, batch)
			if out := st.nc.(*replayConn).out; string(out) != want {
				t.Fatalf("replies %q, want %q", out, want)
			}
		}
	}
	round() // the workers start, the buffers grow
	proxied := testing.AllocsPerRun(50, round)
	direct := testing.AllocsPerRun(50, asyncDirect(cluster, keys, "tok"))
	own := (proxied - direct) / depth
	t.Logf("%.1f allocations per 16+16 through the proxy, %.1f in the quorum and nodes: %.2f per lock and release of its own", proxied, direct, own)
	budget := 0.0
	if raceflag.Enabled {
		budget = 6 // pooled writers and closures dropped at random
	}
	if own > budget {
		t.Fatalf("the proxy allocates %.2f times per pipelined lock and release of its own, budget %.0f", own, budget)
	}
}

// asyncDirect is the quorum's and the nodes' share of a lock and its
// release as Start runs them (AcquireAsync, ReleaseAsync), for each of
// keys: what the tests of started requests (over a socket, pipelined)
// take out of a proxied request.
func asyncDirect(cluster *quorum.Cluster, keys []string, token string) func() {
	acquired := func(quorum.Lock, error) {}
	released := func(bool, error) {}
	return func() {
		for _, k := range keys {
			cluster.AcquireAsync(nil, quorum.SetNX, k, token, 10*time.Second, acquired)
		}
		for _, k := range keys {
			cluster.ReleaseAsync(nil, k, token, released)
		}
	}
}
