package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// setNXArgs is the command every redis-benchmark run sends: a lock on one
// of 100,000 keys, so both the direct server and redlockd see contention
// for the same share of keys.
var setNXArgs = []string{"-r", "100000", "SET", "lock:__rand_int__", "v", "NX", "PX", "10000"}

// benchRun is one redis-benchmark run: requests/s and latency in ms, or
// why it stopped: redis-benchmark quits at the first error reply (through
// redlockd, a NOQUORUM when the node timeout ran out).
type benchRun struct {
	rps, p50, p99, max float64
	aborted            string
}

// redisBenchmark runs redis-benchmark's workload w against addr.
func redisBenchmark(ctx context.Context, addr string, w workload) (benchRun, error) {
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(w.clients), "-n", strconv.Itoa(w.requests),
		"-P", strconv.Itoa(w.pipeline), "--csv"}
	if w.cmd == nil {
		w.cmd = setNXArgs
	}
	cmd := exec.CommandContext(ctx, "redis-benchmark", append(args, w.cmd...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// It stops at the first error reply and says which on stdout.
		return benchRun{aborted: firstError(string(out) + stderr.String())}, fmt.Errorf("redis-benchmark: %w: %s%s", err, out, stderr.String())
	}
	return parseBenchCSV(out)
}

// parseBenchCSV reads redis-benchmark's --csv output: "test", "rps",
// "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
// "p99_latency_ms", "max_latency_ms".
func parseBenchCSV(out []byte) (benchRun, error) {
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		return benchRun{}, fmt.Errorf("redis-benchmark output %q: %w", out, err)
	}
	if len(rows) < 2 || len(rows[0]) < 8 || rows[0][1] != "rps" || rows[0][7] != "max_latency_ms" {
		return benchRun{}, fmt.Errorf("redis-benchmark output %q: not the expected columns", out)
	}
	row := rows[len(rows)-1]
	var r benchRun
	for _, f := range []struct {
		dst *float64
		col int
	}{{&r.rps, 1}, {&r.p50, 4}, {&r.p99, 6}, {&r.max, 7}} {
		if *f.dst, err = strconv.ParseFloat(row[f.col], 64); err != nil {
			return benchRun{}, fmt.Errorf("redis-benchmark output %q: %w", out, err)
		}
	}
	return r, nil
}

// pairResult is one lock+unlock run.
type pairResult struct {
	pairs    int
	elapsed  time.Duration
	p50, p99 time.Duration // of the acquires
	// relP50 and relP99 are of the releases that succeeded.
	relP50, relP99 time.Duration
	// failed counts acquires and releases that did not succeed (keys are
	// unique, so only a timeout can cause one).
	failed int
	// lastErr is one of the failures, for the log.
	lastErr error
}

func (r pairResult) perSec() float64 { return float64(r.pairs) / r.elapsed.Seconds() }

// locker is one lock client: acquire and release one key.
type locker interface {
	lock(ctx context.Context, key string) (unlock func() error, err error)
}

// runPairs has each of `workers` goroutines take and release fresh keys
// until d has passed, timing every acquire and every release.
func runPairs(ctx context.Context, l locker, workers int, d time.Duration, prefix string) (pairResult, error) {
	lat := make([][]time.Duration, workers)
	relLat := make([][]time.Duration, workers)
	failed := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for g := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				key := prefix + strconv.Itoa(g) + ":" + strconv.Itoa(i)
				t0 := time.Now()
				unlock, err := l.lock(ctx, key)
				if err != nil {
					failed[g]++
					errs[g] = err
					continue
				}
				lat[g] = append(lat[g], time.Since(t0))
				t1 := time.Now()
				if err := unlock(); err != nil {
					failed[g]++
					errs[g] = err
					continue
				}
				relLat[g] = append(relLat[g], time.Since(t1))
			}
		})
	}
	wg.Wait()
	res := pairResult{elapsed: time.Since(start)}
	var all, rel []time.Duration
	for g := range workers {
		all = append(all, lat[g]...)
		rel = append(rel, relLat[g]...)
		res.failed += failed[g]
		if errs[g] != nil {
			res.lastErr = errs[g]
		}
	}
	if len(all) == 0 {
		return res, fmt.Errorf("no lock was acquired: %w", errors.Join(errs...))
	}
	res.pairs = len(all)
	res.p50, res.p99 = percentiles(all)
	res.relP50, res.relP99 = percentiles(rel)
	return res, nil
}

// percentiles sorts ds and returns its p50 and p99 (zeros for none).
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

// redsyncLocker is go-redsync used as its README shows, over one go-redis
// pool per backend.
type redsyncLocker struct {
	rs      *redsync.Redsync
	clients []*redis.Client
}

func newRedsyncLocker(addrs []string, workers int) *redsyncLocker {
	l := &redsyncLocker{}
	var pools []rsredis.Pool
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, PoolSize: workers})
		l.clients = append(l.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	l.rs = redsync.New(pools...)
	return l
}

func (l *redsyncLocker) lock(ctx context.Context, key string) (func() error, error) {
	m := l.rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errors.New("redsync: unlock released nothing")
		}
		return err
	}, nil
}

func (l *redsyncLocker) close() {
	for _, c := range l.clients {
		c.Close()
	}
}

// proxyLocker is an unchanged go-redis client pointed at redlockd: SET NX
// PX to take the lock, the usual compare-and-delete script (EVALSHA) to
// release it.
type proxyLocker struct{ c *redis.Client }

var releaseScript = redis.NewScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

func newProxyLocker(addr string, workers int) *proxyLocker {
	return &proxyLocker{c: redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers})}
}

func (l *proxyLocker) lock(ctx context.Context, key string) (func() error, error) {
	tok := token()
	ok, err := l.c.SetNX(ctx, key, tok, 10*time.Second).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("not acquired")
	}
	return func() error {
		n, err := releaseScript.Run(ctx, l.c, []string{key}, tok).Int64()
		if err == nil && n != 1 {
			err = errors.New("release deleted nothing")
		}
		return err
	}, nil
}

func (l *proxyLocker) close() { l.c.Close() }

// token is what a client library would use: 128 random bits.
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// idleConns opens n connections to addr, each answering one PING (so the
// proxy has accepted it and built its session), and returns them open.
func idleConns(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	const workers = 32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				conns[i], errs[i] = pingConn(ctx, addr)
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

func pingConn(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	line := ""
	if _, err = nc.Write([]byte("PING\r\n")); err == nil {
		line, err = bufio.NewReader(nc).ReadString('\n')
	}
	if err == nil && line != "+PONG\r\n" {
		err = fmt.Errorf("PING answered %q", line)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// firstError picks redis-benchmark's "Error from server: …" line, cut short.
func firstError(out string) string {
	for line := range strings.Lines(out) {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "Error from server: "); ok {
			if len(msg) > 120 {
				msg = msg[:120] + "…"
			}
			return msg
		}
	}
	return "exited with an error"
}
