package commands

import (
	"fmt"
	"os"
	"runtime"
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
	fmt.Fprintf(b, "connected_clients:%d\r\n", h.nconns.Load())
}

func (h *Handler) infoStats(b *strings.Builder) {
	st := &h.stats
	fmt.Fprintf(b, "total_commands_processed:%d\r\n", st.commands.Load())
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
