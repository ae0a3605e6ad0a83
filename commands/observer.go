package commands

import (
	"errors"
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
	// "contended" (a null reply: held elsewhere, not held), "no_quorum"
	// or "error" (any other error reply).
	CommandDone(cmd, outcome string, d time.Duration)
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

// outcomeWriter passes a command's reply through and notes what kind of
// reply it started with.
type outcomeWriter struct {
	Writer
	first string
}

func (o *outcomeWriter) note(kind string) {
	if o.first == "" {
		o.first = kind
	}
}

// WriteError counts an error reply as "error" unless noteCause already
// classified it.
func (o *outcomeWriter) WriteError(s string) { o.note("error"); o.Writer.WriteError(s) }

// causeNoter is a Writer that wants to know the error behind the reply
// about to be written, so that metrics classify by the error's type rather
// than by the reply's text.
type causeNoter interface{ noteCause(err error) }

func (o *outcomeWriter) noteCause(err error) {
	if errors.Is(err, quorum.ErrNoQuorum) {
		o.note("no_quorum")
	}
}

// noteCause tells w, if it wants to know, the error it is about to report.
func noteCause(w Writer, err error) {
	if n, ok := w.(causeNoter); ok {
		n.noteCause(err)
	}
}

func (o *outcomeWriter) WriteNull() { o.note("contended"); o.Writer.WriteNull() }

func (o *outcomeWriter) WriteSimple(s string)      { o.note("ok"); o.Writer.WriteSimple(s) }
func (o *outcomeWriter) WriteBulk(b []byte)        { o.note("ok"); o.Writer.WriteBulk(b) }
func (o *outcomeWriter) WriteBulkString(s string)  { o.note("ok"); o.Writer.WriteBulkString(s) }
func (o *outcomeWriter) WriteInt(n int64)          { o.note("ok"); o.Writer.WriteInt(n) }
func (o *outcomeWriter) WriteArray(n int)          { o.note("ok"); o.Writer.WriteArray(n) }
func (o *outcomeWriter) WriteMap(n int)            { o.note("ok"); o.Writer.WriteMap(n) }
func (o *outcomeWriter) WriteSet(n int)            { o.note("ok"); o.Writer.WriteSet(n) }
func (o *outcomeWriter) WriteDouble(f float64)     { o.note("ok"); o.Writer.WriteDouble(f) }
func (o *outcomeWriter) WriteVerbatim(f, s string) { o.note("ok"); o.Writer.WriteVerbatim(f, s) }

func (o *outcomeWriter) outcome(cmd *command) string {
	switch {
	case o.first == "":
		return "ok"
	case o.first == "ok" && cmd.outcome == outcomeAcquire:
		return "acquired"
	}
	return o.first
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
