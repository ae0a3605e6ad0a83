package commands

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// infoSections are INFO's sections in output order.
var infoSections = []struct {
	name  string
	write func(h *Handler, b *strings.Builder)
}{
	{"server", (*Handler).infoServer},
	{"clients", (*Handler).infoClients},
	{"memory", (*Handler).infoMemory},
	{"stats", (*Handler).infoStats},
	{"backends", (*Handler).infoBackends},
}

// cmdInfo: INFO [section …] as a bulk string in Redis's "# Section" format.
func (h *Handler) cmdInfo(c *call) {
	want := map[string]bool{}
	for _, a := range c.args {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec.name] {
			continue
		}
		infoHeader(&b, sec.name)
		sec.write(h, &b)
	}
	h.extraInfo(want, all, &b)
	if all || want["keyspace"] {
		infoHeader(&b, "keyspace")
		h.infoKeyspace(c.s, &b)
	}
	c.w.WriteVerbatim("txt", b.String())
}

// infoHeader starts a section: "# Name", after a blank line unless first.
func infoHeader(b *strings.Builder, name string) {
	if b.Len() > 0 {
		b.WriteString("\r\n")
	}
	fmt.Fprintf(b, "# %s%s\r\n", strings.ToUpper(name[:1]), name[1:])
}

func (h *Handler) infoServer(b *strings.Builder) {
	up := time.Since(h.started)
	fmt.Fprintf(b, "redis_version:%s\r\nredlockd_version:%s\r\nredis_mode:standalone\r\n", RedisVersion, h.opts.Version)
	fmt.Fprintf(b, "os:%s %s\r\narch_bits:64\r\ngo_version:%s\r\nprocess_id:%d\r\n", runtime.GOOS, runtime.GOARCH, runtime.Version(), os.Getpid())
	fmt.Fprintf(b, "uptime_in_seconds:%d\r\nuptime_in_days:%d\r\n", int64(up.Seconds()), int64(up.Hours()/24))
}

func (h *Handler) infoClients(b *strings.Builder) {
	fmt.Fprintf(b, "connected_clients:%d\r\nblocked_clients:%d\r\n", h.nconns.Load(), h.stats.blocked.Load())
}

// infoMemory reports the Go heap in Redis's fields: used_memory is the
// bytes of live and not yet collected objects, what the allocator holds
// for redlockd's data, as Redis's used_memory is its allocator's.
func (h *Handler) infoMemory(b *strings.Builder) {
	heap := heapBytes()
	fmt.Fprintf(b, "used_memory:%d\r\nused_memory_human:%s\r\nmaxmemory:0\r\n", heap, humanBytes(heap))
}

func (h *Handler) infoStats(b *strings.Builder) {
	st := &h.stats
	n := st.commands.Load()
	fmt.Fprintf(b, "total_connections_received:%d\r\ntotal_commands_processed:%d\r\ninstantaneous_ops_per_sec:%d\r\n",
		h.nextID.Load(), n, st.opsPerSec(n, time.Now()))
	if h.opts.Info != nil {
		// The lock counters come from the record of what each quorum
		// operation did, the one /metrics serves: they cannot disagree.
		h.opts.Info.WriteInfo("stats", b)
	}
	ka := h.KeepaliveStats()
	fmt.Fprintf(b, "keepalive_held:%d\r\nkeepalive_lost:%d\r\n", ka.Held, ka.Lost)
}

func (h *Handler) infoBackends(b *strings.Builder) {
	cfg := h.cluster.Config()
	nodes := h.cluster.Nodes()
	fmt.Fprintf(b, "backends:%d\r\nquorum:%d\r\nnode_timeout_ms:%d\r\ndrift_factor:%g\r\n",
		len(nodes), h.cluster.Quorum(), cfg.NodeTimeout.Milliseconds(), cfg.DriftFactor)
	if cfg.RestartQuarantine == quorum.QuarantineAuto {
		// How long each restart costs is in the backend lines below.
		fmt.Fprintf(b, "restart_quarantine:auto\r\n")
	} else {
		fmt.Fprintf(b, "restart_quarantine_ms:%d\r\n", cfg.RestartQuarantine.Milliseconds())
	}
	for i, st := range h.cluster.NodeStates() {
		fmt.Fprintf(b, "%s%s\r\n", backendLine(i, st), h.backendExtra(st.Name))
		b.WriteString(shardLines(i, st))
	}
}

// infoKeyspace writes Redis's "dbN:keys=…" line for each database that
// has keys, as the backends count them (see cmdDBSize); nothing when too
// few backends answered. Every key redlockd stores has a ttl, so expires
// is keys; avg_ttl is 0, "not known", as Redis writes it.
func (h *Handler) infoKeyspace(s *Session, b *strings.Builder) {
	for db, n := range h.keyspace(s) {
		if n > 0 {
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, n)
		}
	}
}

// Blocked is how many commands wait now (LOCK … WAIT).
func (h *Handler) Blocked() int64 { return h.stats.blocked.Load() }

// Started is when the handler was made: the server's start.
func (h *Handler) Started() time.Time { return h.started }

func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// humanBytes writes n as Redis's used_memory_human does: "1.50M".
func humanBytes(n int64) string {
	const unit = 1024
	f, suffix := float64(n), "B"
	for _, s := range []string{"K", "M", "G", "T"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	if suffix == "B" {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.2f%s", f, suffix)
}
