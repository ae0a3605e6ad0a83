package metrics

import (
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The status page (/ on the metrics address) is what a person reads
// instead of INFO backends: one server-rendered HTML page with no
// external assets, refreshing itself, built from the same record as the
// gauges and /readyz.

// statusRefresh is how often the page reloads itself.
const statusRefresh = 2 * time.Second

// backendStatus is one backend's or shard's row.
type backendStatus struct {
	Name, Shard string
	State       string // up, down, quarantined, refused, unknown
	Why         string // what the state means for the votes
	Link        string // what the lock calls last found: up, down, unknown
	Latency     string // mean call time
	RunID       string
	Left        string // quarantine left, "" when none
}

type statusPage struct {
	Version, Uptime, Refresh string
	Backends, Quorum, Voting int
	Ready                    bool
	Rows                     []backendStatus
	Acquired, Released       int64
	Kept, Waiting, Lost      int64
}

// stateText is a state and what it means, for the page and
// /readyz/backends.
type stateText struct{ word, detail string }

// statusOf says what a backend's record means for its votes.
func statusOf(st quorum.NodeState) stateText {
	switch {
	case st.Refused != "":
		return stateText{"refused", ": " + st.Refused}
	case st.Quarantined:
		// The longer wait of the two: a quarantined backend that is down
		// too votes no earlier than its quarantine's end.
		why := ": " + quarantineWhy(st.QuarantinedUntil, st.QuarantinePending)
		if !st.Up && st.LastError != "" {
			why += "; and the last look failed: " + st.LastError
		}
		return stateText{"quarantined", why}
	case !st.Up && st.LastError == "" && st.Watched:
		return stateText{"unknown", ": not looked at yet"}
	case !st.Up && st.Watched:
		return stateText{"down", ": " + st.LastError}
	}
	return stateText{"up", ""}
}

func quarantineWhy(until time.Time, pending bool) string {
	why := fmt.Sprintf("restarted (or started after the others) and may have lost locks; votes again in %s", left(until))
	if pending {
		why += " at most (the other backends' lock horizons are not read yet)"
	}
	return why
}

func left(until time.Time) string {
	return max(time.Until(until), 0).Round(time.Second).String()
}

// status gathers the page's figures.
func (m *Metrics) status() statusPage {
	m.Refresh()
	states := m.states()
	held, lost := m.keepaliveFn()
	p := statusPage{
		Version: m.version, Uptime: time.Since(m.started).Round(time.Second).String(),
		Refresh: fmt.Sprint(int(statusRefresh.Seconds())), Backends: len(states),
		Kept: held, Lost: lost, Waiting: m.waitingFn(),
		Acquired: m.sumOps(grantOps, quorum.OutcomeOK), Released: m.opCount(quorum.OpRelease, quorum.OutcomeOK),
	}
	p.Voting, p.Quorum = m.voting()
	p.Ready = p.Voting >= p.Quorum
	for _, st := range states {
		p.Rows = append(p.Rows, m.backendRow(st))
		for _, sh := range st.Shards {
			p.Rows = append(p.Rows, shardRow(st.Name, sh))
		}
	}
	return p
}

func (m *Metrics) sumOps(ops []string, outcome string) int64 {
	var n int64
	for _, op := range ops {
		n += m.opCount(op, outcome)
	}
	return n
}

func (m *Metrics) backendRow(st quorum.NodeState) backendStatus {
	s := statusOf(st)
	n := m.node(st.Name)
	calls, busy := n.calls.Load(), time.Duration(n.busy.Load())
	row := backendStatus{Name: st.Name, State: s.word, Why: trimColon(s.detail), Link: n.state().String(), RunID: st.RunID}
	if calls > 0 {
		row.Latency = (busy / time.Duration(calls)).Round(time.Microsecond).String()
	}
	if st.Quarantined {
		row.Left = left(st.QuarantinedUntil)
	}
	return row
}

func shardRow(node string, sh quorum.ShardState) backendStatus {
	row := backendStatus{Name: node, Shard: sh.Name + " (" + sh.Master + ")", State: "up", RunID: sh.RunID}
	switch {
	case !sh.Up:
		row.State, row.Why = "down", sh.LastError
	case sh.Quarantined:
		row.State, row.Why, row.Left = "quarantined", quarantineWhy(sh.QuarantinedUntil, sh.QuarantinePending), left(sh.QuarantinedUntil)
	}
	return row
}

func trimColon(s string) string {
	if len(s) >= 2 && s[:2] == ": " {
		return s[2:]
	}
	return s
}

func (m *Metrics) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = statusTemplate.Execute(w, m.status())
}

var statusTemplate = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>redlockd {{.Version}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.up { color: #17692b; } .down, .refused { color: #b00020; } .quarantined, .unknown { color: #9a5b00; }
.bad { color: #b00020; font-weight: bold; } .good { color: #17692b; font-weight: bold; }
</style>
</head>
<body>
<h1>redlockd</h1>
<p id="summary">Version {{.Version}}, up {{.Uptime}}.
{{if .Ready}}<span class="good">Locking: {{.Voting}} of {{.Backends}} backends vote, quorum {{.Quorum}}.</span>
{{else}}<span class="bad">Not locking: {{.Voting}} of {{.Backends}} backends vote, quorum {{.Quorum}}.</span>{{end}}</p>
<h2>Backends</h2>
<table id="backends">
<tr><th>backend</th><th>shard</th><th>state</th><th>link</th><th>latency</th><th>run_id</th><th>quarantine left</th><th>why</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Shard}}</td><td class="{{.State}}">{{.State}}</td><td>{{.Link}}</td><td>{{.Latency}}</td><td>{{.RunID}}</td><td>{{.Left}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
<h2>Locks</h2>
<table id="locks">
<tr><th>granted</th><td>{{.Acquired}}</td></tr>
<tr><th>released</th><td>{{.Released}}</td></tr>
<tr><th>kept now (KEEPALIVE and session locks)</th><td>{{.Kept}}</td></tr>
<tr><th>waiting now (LOCK … WAIT)</th><td>{{.Waiting}}</td></tr>
<tr><th>kept locks lost</th><td>{{.Lost}}</td></tr>
</table>
<p>Refreshes every {{.Refresh}} s. Machine-readable: <a href="/metrics">/metrics</a>, <a href="/readyz">/readyz</a>, <a href="/readyz/backends">/readyz/backends</a>.</p>
</body>
</html>
`))
