package commands

import (
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Observer learns of every command the table runs, for metrics. Its
// methods must be safe for concurrent use and quick: they run on the
// command's path.
type Observer interface {
	// CommandDone reports one command by its lower-case name and outcome:
	// "acquired" (a lock-taking command that got the lock), "ok",
	// "contended" (the quorum said held elsewhere, or not held),
	// "no_quorum" or "error" (any other error reply). It follows from the
	// command's registration and the quorum's verdict, not from the reply.
	//
	// round, when not nil, is the command's quorum operation, which the
	// cluster's Observer is then not told of but for the calls its round
	// answered after its outcome (see quorum.Reporter): a command started
	// in its asynchronous form (Handler.Start) is reported once, with its
	// round, before its reply is handed on. round is only valid during
	// the call. nil: the command's operations, if any, were reported to
	// the cluster's Observer on their own.
	CommandDone(cmd, outcome string, d time.Duration, round *quorum.Report)
}

// InfoSource adds figures kept elsewhere (metrics) to INFO.
type InfoSource interface {
	// BackendFields returns extra ",key=value" fields for a backend's line
	// in INFO backends.
	BackendFields(node string) string
	// InfoSections names the sections it adds after INFO's own.
	InfoSections() []string
	// WriteInfo writes a section's "field:value\r\n" lines.
	WriteInfo(section string, b *strings.Builder)
}

// Clients is the number of open client connections.
func (h *Handler) Clients() int64 { return h.nconns.Load() }

// outcomeWriter passes a command's reply through and keeps what the
// command's outcome is made of: the quorum's verdict that the command
// reported (noteVerdict), and whether it wrote an error reply. The reply's
// bytes decide nothing: a null or a 0 may be a contended lock or a free
// key read by a majority.
type outcomeWriter struct {
	Writer
	verdict string // the first verdict other than ok; "" for none
	errored bool
}

// WriteError marks the command as failed unless a verdict explains it.
func (o *outcomeWriter) WriteError(s string) { o.errored = true; o.Writer.WriteError(s) }

// verdictNoter is a Writer that wants to know the quorum's verdict behind
// the reply about to be written.
type verdictNoter interface{ noteVerdict(err error) }

func (o *outcomeWriter) noteVerdict(err error) {
	if v := quorum.Outcome(err); v != quorum.OutcomeOK && o.verdict == "" {
		o.verdict = v
	}
}

// noteVerdict tells w, if it wants to know, the error of the quorum
// operation (or of the check standing for one) whose result it is about
// to report.
func noteVerdict(w Writer, err error) {
	if n, ok := w.(verdictNoter); ok {
		n.noteVerdict(err)
	}
}

// outcome is the command's outcome from its registration and the verdict:
// a lock-taking command that succeeded "acquired", another "ok".
func (o *outcomeWriter) outcome(cmd *command) string {
	switch {
	case o.verdict != "":
		return o.verdict
	case o.errored:
		return quorum.OutcomeError
	case cmd.outcome == outcomeAcquire:
		return "acquired"
	}
	return quorum.OutcomeOK
}

func (h *Handler) backendExtra(node string) string {
	if h.opts.Info == nil {
		return ""
	}
	return h.opts.Info.BackendFields(node)
}

// extraInfo appends the InfoSource's own sections that were asked for.
func (h *Handler) extraInfo(want map[string]bool, all bool, b *strings.Builder) {
	if h.opts.Info == nil {
		return
	}
	for _, name := range h.opts.Info.InfoSections() {
		if !all && !want[name] {
			continue
		}
		infoHeader(b, name)
		h.opts.Info.WriteInfo(name, b)
	}
}
