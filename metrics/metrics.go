package metrics

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redlockd/redlockd/quorum"
)

// Family names, exported so that dashboards and alerts can be checked
// against what is really registered.
const (
	NameCommands          = "redlockd_commands_total"
	NameCommandSeconds    = "redlockd_command_duration_seconds"
	NameOperations        = "redlockd_quorum_operations_total"
	NameOperationSeconds  = "redlockd_quorum_operation_duration_seconds"
	NameValidityRatio     = "redlockd_lock_validity_ratio"
	NameBackendUp         = "redlockd_backend_up"
	NameBackendQuarantine = "redlockd_backend_quarantined"
	NameQuarantineLeft    = "redlockd_backend_quarantine_seconds"
	NameBackendSeconds    = "redlockd_backend_request_duration_seconds"
	NameBackendErrors     = "redlockd_backend_errors_total"
	NameBackendChanges    = "redlockd_backend_state_changes_total"
	NameKeepaliveLocks    = "redlockd_keepalive_locks"
	NameRenewalsLost      = "redlockd_keepalive_renewals_lost_total"
	NameClients           = "redlockd_client_connections"
	NameBuildInfo         = "redlockd_build_info"
	NameQuorum            = "redlockd_quorum"
	NameVoting            = "redlockd_backends_voting"
	NameWaiting           = "redlockd_lock_waiters"
)

// Names lists every redlockd_ family this package registers. Histograms
// also expose the _bucket, _sum and _count series of their name.
func Names() []string {
	return []string{
		NameCommands, NameCommandSeconds, NameOperations, NameOperationSeconds,
		NameValidityRatio, NameBackendUp, NameBackendQuarantine, NameQuarantineLeft, NameBackendSeconds,
		NameBackendErrors, NameBackendChanges, NameKeepaliveLocks, NameRenewalsLost,
		NameClients, NameBuildInfo, NameQuorum, NameVoting, NameWaiting,
	}
}

// Options configure New. Zero values take the documented defaults.
type Options struct {
	// Backends are the node names, in configuration order; their gauges
	// exist from the start. Default none (they appear on first report).
	Backends []string
	// Clients returns the number of open client connections, read at
	// scrape time. Default: the gauge is not registered.
	Clients func() int64
	// NodeStates is the cluster's record of each backend's health, fed by
	// one watcher per backend (quorum.Cluster.NodeStates). The up and
	// quarantined gauges, /readyz and the backend up/down log lines all
	// read it. Default: no backend state is known, and /readyz is ready.
	NodeStates func() []quorum.NodeState
	// Keepalive returns, at scrape time, how many locks the proxy renews
	// for open connections (KEEPALIVE and session locks) and how many it
	// has lost because their validity ran out unrenewed. Default: both 0.
	Keepalive func() (held, lost int64)
	// Waiting returns, at scrape time, how many commands wait for a lock
	// now (LOCK … WAIT). Default: always 0.
	Waiting func() int64
	// Version labels redlockd_build_info and heads the status page.
	// Default "dev".
	Version string
	// Started is when the process started, for the status page's uptime.
	// Default: when New ran.
	Started time.Time
	// Logger gets one line per backend state change. Default slog.Default().
	Logger *slog.Logger
}

// Metrics is the registry and every family in it.
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	commands       *prometheus.CounterVec
	commandSeconds *prometheus.HistogramVec
	ops            *prometheus.CounterVec
	opSeconds      *prometheus.HistogramVec
	validity       prometheus.Histogram
	statesFn       func() []quorum.NodeState
	keepaliveFn    func() (held, lost int64)
	waitingFn      func() int64
	version        string
	started        time.Time
	nodeSeconds    *prometheus.HistogramVec
	nodeErrors     *prometheus.CounterVec
	nodeChanges    *prometheus.CounterVec

	// The series of commands and operations, resolved once by label.
	commandCounts handles[labelPair, prometheus.Counter]
	commandSecs   handles[string, prometheus.Observer]
	opCounts      handles[labelPair, prometheus.Counter]
	opSecs        handles[string, prometheus.Observer]

	nodes nodeTable
	seen  seenStates
}

// latencyBuckets span a loopback round trip (~100µs) to a slow WAIT (~10s).
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 14)

// New builds the registry, with Go runtime and process collectors.
func New(o Options) *Metrics {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	if o.Waiting == nil {
		o.Waiting = func() int64 { return 0 }
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: o.Logger, statesFn: o.NodeStates,
		waitingFn: o.Waiting, version: o.Version, started: o.Started}
	m.define()
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: NameBuildInfo,
		Help: "Always 1; the version label names the running build.", ConstLabels: prometheus.Labels{"version": o.Version}})
	info.Set(1)
	m.reg.MustRegister(info)
	if o.Clients != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: NameClients,
			Help: "Open client connections."}, func() float64 { return float64(o.Clients()) }))
	}
	m.keepaliveFn = o.Keepalive
	if m.keepaliveFn == nil {
		m.keepaliveFn = func() (int64, int64) { return 0, 0 }
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: NameKeepaliveLocks,
			Help: "Locks the proxy renews for open connections (KEEPALIVE and session locks)."},
			func() float64 { held, _ := m.keepaliveFn(); return float64(held) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: NameRenewalsLost,
			Help: "Kept locks lost: their validity ran out without a renewal that reached a majority."},
			func() float64 { _, lost := m.keepaliveFn(); return float64(lost) }))
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: NameQuorum,
			Help: "Backends that must agree for a lock: a majority of the configured backends."},
			func() float64 { return float64(m.quorum()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: NameVoting,
			Help: "Backends whose votes count now: they answered the last look and are neither quarantined nor refused."},
			func() float64 { v, _ := m.voting(); return float64(v) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: NameWaiting,
			Help: "Commands waiting for a lock now (LOCK … WAIT)."},
			func() float64 { return float64(m.waitingFn()) }))
	for i, b := range o.Backends {
		m.node(b)
		m.nodes.index(i, b)
	}
	return m
}

func (m *Metrics) define() {
	m.commands = m.counterVec(NameCommands, "Commands run, by command and outcome (acquired, ok, contended, no_quorum, error).", "command", "outcome")
	m.commandSeconds = m.histogramVec(NameCommandSeconds, "Time to run a command, reply included.", latencyBuckets, "command")
	m.ops = m.counterVec(NameOperations, "Quorum operations, by operation and outcome (ok, contended, no_quorum, error).", "op", "outcome")
	m.opSeconds = m.histogramVec(NameOperationSeconds, "Time of one quorum operation over all backends.", latencyBuckets, "op")
	m.validity = prometheus.NewHistogram(prometheus.HistogramOpts{Name: NameValidityRatio,
		Help:    "Validity left of the ttl when a lock was granted or extended (1 = nothing lost to latency and drift).",
		Buckets: []float64{0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 1}})
	m.reg.MustRegister(&stateCollector{m: m, node: newGauges("backend"), shards: newGauges("backend", "shard")})
	m.nodeSeconds = m.histogramVec(NameBackendSeconds, "Time of one call to one backend.", latencyBuckets, "backend", "op")
	m.nodeErrors = m.counterVec(NameBackendErrors, "Failed backend calls, by kind (timeout, refused, a Redis error class such as OOM or READONLY, other).", "backend", "kind")
	m.nodeChanges = m.counterVec(NameBackendChanges, "Backend transitions between answering and not, by the state entered (up, down).", "backend", "state")
	m.reg.MustRegister(m.validity)
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(v)
	return v
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(v)
	return v
}

// Registry is the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// CommandDone counts one command of the command table, and, when it
// brings one, its quorum operation: the series NodesDone and OpDone
// would move for that operation, moved here instead.
func (m *Metrics) CommandDone(cmd, outcome string, d time.Duration, round *quorum.Report) {
	counterOf(&m.commandCounts, m.commands, cmd, outcome).Inc()
	observerOf(&m.commandSecs, m.commandSeconds, cmd).Observe(d.Seconds())
	if round == nil {
		return
	}
	if len(round.Calls) > 0 {
		m.NodesDone(round.Op, round.Calls)
	}
	m.OpDone(round.Op, round.Outcome, round.D, round.Validity, round.TTL)
}

// OpDone implements quorum.Observer.
func (m *Metrics) OpDone(op, outcome string, d time.Duration, validity, ttl time.Duration) {
	counterOf(&m.opCounts, m.ops, op, outcome).Inc()
	observerOf(&m.opSecs, m.opSeconds, op).Observe(d.Seconds())
	if m.debugging() {
		m.log.Debug("quorum round", "op", op, "outcome", outcome, "took", d, "validity", validity, "ttl", ttl)
	}
	if ttl > 0 && validity > 0 {
		m.validity.Observe(float64(validity) / float64(ttl))
	}
}

var _ quorum.Observer = (*Metrics)(nil)
