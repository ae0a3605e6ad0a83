package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The anchors are what a Redlock round is compared with besides the
// direct server: twemproxy (Debian's nutcracker), a C proxy forwarding to
// one redis-server, the Go floor (floor.go), and redlockd over one
// redis-server, so that the cost of proxying is told apart from the cost
// of the fan-out, and the Go runtime's share of it from redlockd's.
const (
	anchorTwemproxy = "twemproxy → 1"
	anchorRedlockd1 = "redlockd → 1"
)

// anchors starts the anchor targets at the first backend count: each over
// a redis-server of its own. A missing nutcracker skips its row with a
// line saying so; the bench installs nothing.
func (m *nRun) anchors() (targets []target, names []string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	server := func(name string) (*redisProc, error) {
		p, err := startRedis(mkdir(m.dir, name))
		if err == nil {
			stops = append(stops, p.stop)
		}
		return p, err
	}
	if path, lookErr := exec.LookPath("nutcracker"); lookErr != nil {
		fmt.Fprintln(m.log, "twemproxy row skipped: nutcracker is not on PATH (Debian: apt-get install nutcracker)")
	} else {
		r, err := server("twemproxy-backend")
		if err != nil {
			return nil, nil, stop, err
		}
		tw, err := startNutcracker(path, mkdir(m.dir, "twemproxy"), r.addr)
		if err != nil {
			return nil, nil, stop, err
		}
		stops = append(stops, tw.stop)
		targets = append(targets, target{addr: tw.addr, pid: tw.pid(), backends: []*redisProc{r}, servers: []string{r.addr}})
		names = append(names, anchorTwemproxy)
	}
	for _, epoll := range []bool{false, true} {
		if epoll && !epollFloorSupported {
			break
		}
		fl, err := startFloor(epoll)
		if err != nil {
			return nil, nil, stop, err
		}
		stops = append(stops, fl.stop)
		targets = append(targets, target{addr: fl.addr, pid: fl.pid()})
		names = append(names, floorName(epoll))
	}
	r, err := server("redlockd1-backend")
	if err != nil {
		return nil, nil, stop, err
	}
	px, err := startProxy(m.bins[0].path, []string{r.addr}, "--node-timeout", m.o.nodeTimeout.String())
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, px.stop)
	targets = append(targets, target{addr: px.addr, pid: px.pid(), backends: []*redisProc{r}, servers: []string{r.addr}})
	names = append(names, anchorRedlockd1)
	return targets, names, stop, nil
}

// startNutcracker runs nutcracker in the foreground on a free loopback
// port (and a free stats port: its default is fixed) in front of server,
// and waits until it accepts connections.
func startNutcracker(bin, dir, server string) (*listeningProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	stats, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := filepath.Join(dir, "nutcracker.yml")
	// One pool, one server, Redis protocol; a long server timeout so that
	// nutcracker never answers an error of its own during a run.
	text := fmt.Sprintf("bench:\n  listen: %s\n  redis: true\n  hash: fnv1a_64\n  distribution: ketama\n"+
		"  timeout: 10000\n  preconnect: true\n  server_connections: 1\n  auto_eject_hosts: false\n  servers:\n   - %s:1\n", addr, server)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-c", conf, "-s", strconv.Itoa(stats), "-a", "127.0.0.1",
		"-o", filepath.Join(dir, "nutcracker.log"), "-p", filepath.Join(dir, "nutcracker.pid"), "-v", "4")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nutcracker: %w", err)
	}
	return waitListening(cmd, addr, "nutcracker", func() string {
		log, _ := os.ReadFile(filepath.Join(dir, "nutcracker.log"))
		return string(log)
	})
}

// anchorRows are the anchors' CPU and throughput beside the direct server
// and redlockd at the first backend count, with the ratios the targets
// name: each process over direct, and redlockd → 1 over twemproxy → 1.
func (t *tabler) anchorRows() {
	r := t.r
	if len(r.anchors) == 0 {
		return
	}
	t.printf("\n### Anchors: proxying alone and a Redlock round (CPU per request of the process clients talk to, median of %d)\n\n", r.opts.reps)
	t.printf("| process | %s CPU | / direct | / twemproxy | requests/s | %s CPU | / direct | / twemproxy | requests/s |\n",
		workloadName(r.opts, c50), workloadName(r.opts, p16))
	t.printf("|---|---|---|---|---|---|---|---|---|\n")
	tw, hasTw := r.anchors[anchorTwemproxy]
	type anchorRow struct {
		name string
		s    [2]summary
	}
	rows := []anchorRow{{"redis-server direct", r.direct}}
	if hasTw {
		rows = append(rows, anchorRow{anchorTwemproxy + " redis-server (nutcracker)", tw})
	}
	floor, hasFloor := r.anchors[anchorGoFloor]
	if hasFloor {
		rows = append(rows, anchorRow{anchorGoFloor + ": a goroutine per connection answering +OK, no backend", floor})
	}
	if ep, ok := r.anchors[anchorEpollFloor]; ok {
		rows = append(rows, anchorRow{anchorEpollFloor + ": the same answers from an epoll loop per processor", ep})
	}
	rows = append(rows, anchorRow{anchorRedlockd1 + " redis-server", r.anchors[anchorRedlockd1]})
	var s [2]summary
	for w := range 2 {
		s[w], _ = t.measured(runKey{r.bins[0], t.n0}, w)
	}
	rows = append(rows, anchorRow{fmt.Sprintf("redlockd → %d redis-servers (a Redlock round)", t.n0), s})
	for _, a := range rows {
		t.printf("| %s |", a.name)
		for w := range 2 {
			if a.s[w].done == 0 {
				t.printf(" %s | — | — | — |", t.cell(a.s[w]))
				continue
			}
			vsTw := "—"
			if hasTw {
				vsTw = ratio(a.s[w].selfUS, tw[w].selfUS)
			}
			t.printf(" %.2f µs | %s | %s | %.0f |", a.s[w].selfUS, ratio(a.s[w].selfUS, r.direct[w].selfUS), vsTw, a.s[w].rps)
		}
		t.printf("\n")
	}
	t.printf("\nSystem calls per request of the same processes (`syscr` and `syscw` of `/proc/<pid>/io`: a read that\n" +
		"found nothing and sent its goroutine or loop back to the poller counts too), and the commands per read\n" +
		"event at the redis-servers behind them (one backend write of the process carries about that many):\n\n")
	t.printf("| process | %s reads | writes | commands per backend read | %s reads | writes | commands per backend read |\n",
		workloadName(r.opts, c50), workloadName(r.opts, p16))
	t.printf("|---|---|---|---|---|---|---|\n")
	for _, a := range rows {
		t.printf("| %s |", a.name)
		for w := range 2 {
			if a.s[w].done == 0 || a.s[w].readsPer < 0 {
				t.printf(" — | — | — |")
				continue
			}
			per := "—"
			if a.s[w].perRead > 0 {
				per = fmt.Sprintf("%.1f", a.s[w].perRead)
			}
			t.printf(" %.2f | %.2f | %s |", a.s[w].readsPer, a.s[w].writesPer, per)
		}
		t.printf("\n")
	}
	if !hasTw {
		t.printf("\nNo twemproxy row: nutcracker was not on PATH.\n")
	}
	if one := r.anchors[anchorRedlockd1]; hasFloor {
		t.printf("\nredlockd → 1 over the Go floor: %s (%s), %s (%s); redlockd → %d over it: %s, %s. "+
			"The Go floor over twemproxy → 1: %s, %s (a C proxy's event loop against a goroutine per connection).\n",
			ratio(one[c50].selfUS, floor[c50].selfUS), workloadName(r.opts, c50),
			ratio(one[p16].selfUS, floor[p16].selfUS), workloadName(r.opts, p16),
			t.n0, ratio(s[c50].selfUS, floor[c50].selfUS), ratio(s[p16].selfUS, floor[p16].selfUS),
			ratio(floor[c50].selfUS, tw[c50].selfUS), ratio(floor[p16].selfUS, tw[p16].selfUS))
		if ep, ok := r.anchors[anchorEpollFloor]; ok {
			t.printf("\nThe epoll floor over the Go floor: %s, %s (below 1: an event loop of its own costs less than a goroutine per connection).\n",
				ratio(ep[c50].selfUS, floor[c50].selfUS), ratio(ep[p16].selfUS, floor[p16].selfUS))
		}
	}
	t.flushNotes()
}

// twemproxyRatio is redlockd → 1's CPU per request over twemproxy → 1's.
func (t *tabler) twemproxyRatio(w int) func(string) string {
	return func(bin string) string {
		tw, ok := t.r.anchors[anchorTwemproxy]
		one := t.r.anchors[anchorRedlockd1]
		if bin != t.r.bins[0] {
			return "—"
		}
		if !ok || tw[w].done == 0 || one[w].done == 0 {
			return "— (no twemproxy run)"
		}
		return fmt.Sprintf("**%s** (%.2f / %.2f µs)", ratio(one[w].selfUS, tw[w].selfUS), one[w].selfUS, tw[w].selfUS)
	}
}
