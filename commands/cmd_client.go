package commands

import (
	"fmt"
	"strings"
)

func init() {
	register(&command{name: "client", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdClient})
}

// cmdClient: the CLIENT subcommands that clients send on connect.
func (h *Handler) cmdClient(c *call) {
	sub := strings.ToUpper(c.arg(0))
	n := len(c.args)
	switch {
	case sub == "SETNAME" && n == 2:
		if !validClientName(c.arg(1)) {
			c.w.WriteError(msgBadName)
			return
		}
		c.s.setName(c.arg(1))
		c.w.WriteSimple("OK")
	case sub == "GETNAME" && n == 1:
		if name := c.s.Name(); name != "" {
			c.w.WriteBulkString(name)
		} else {
			c.w.WriteNull()
		}
	case sub == "SETINFO" && n == 3:
		h.clientSetInfo(c)
	case sub == "ID" && n == 1:
		c.w.WriteInt(c.s.ID)
	case sub == "INFO" && n == 1:
		c.w.WriteVerbatim("txt", h.clientLine(c.s)+"\n")
	case sub == "LIST":
		c.w.WriteVerbatim("txt", h.clientList())
	case (sub == "NO-EVICT" || sub == "NO-TOUCH") && n == 2:
		// Neither changes what a lock node keeps: accepted as Redis 7.2
		// accepts them.
		if !strings.EqualFold(c.arg(1), "on") && !strings.EqualFold(c.arg(1), "off") {
			c.w.WriteError(msgSyntax)
			return
		}
		c.w.WriteSimple("OK")
	case sub == "TRACKING" && n >= 2:
		h.clientTracking(c)
	case sub == "CACHING" && n == 2:
		h.clientCaching(c)
	case sub == "TRACKINGINFO" && n == 1:
		h.clientTrackingInfo(c)
	case sub == "GETREDIR" && n == 1:
		h.clientGetRedir(c)
	case isClientSub(sub):
		c.w.WriteError(errArity("client|" + strings.ToLower(sub)))
	default:
		c.w.WriteError(errUnknownSub(c.arg(0), "CLIENT"))
	}
}

func isClientSub(sub string) bool {
	switch sub {
	case "SETNAME", "GETNAME", "SETINFO", "ID", "INFO", "NO-EVICT", "NO-TOUCH",
		"TRACKING", "CACHING", "TRACKINGINFO", "GETREDIR":
		return true
	}
	return false
}

func (h *Handler) clientSetInfo(c *call) {
	attr, val := strings.ToUpper(c.arg(1)), c.arg(2)
	if !validClientName(val) {
		c.w.WriteError("ERR " + strings.ToLower(attr) + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	switch attr {
	case "LIB-NAME":
		c.s.libName = val
	case "LIB-VER":
		c.s.libVer = val
	default:
		c.w.WriteError("ERR Unrecognized option '" + c.arg(1) + "'")
		return
	}
	c.w.WriteSimple("OK")
}

// clientLine is the session's line of CLIENT INFO and CLIENT LIST: the
// fields of Redis 7.2's that describe what redlockd keeps of a
// connection, in Redis's order and form.
func (h *Handler) clientLine(s *Session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	multi, redir := -1, int64(-1)
	if s.txn != nil {
		multi = len(s.txn.queued)
	}
	st := s.tracking.state
	if st.on {
		redir = max(st.redirect, 0)
	}
	return fmt.Sprintf("id=%d addr=%s name=%s flags=%s db=%d sub=%d psub=%d multi=%d redir=%d resp=%d lib-name=%s lib-ver=%s",
		s.ID, s.Addr, s.name, s.flagsLocked(), s.db.Load(), len(s.subs.channels), len(s.subs.patterns),
		multi, redir, s.proto.Load(), s.libName, s.libVer)
}

// flagsLocked is CLIENT INFO's flags, as Redis writes them: P subscribed,
// x in MULTI, t tracking, R its redirect broken, B broadcasting,
// d a WATCHed key changed; N for none.
func (s *Session) flagsLocked() string {
	var f []byte
	add := func(on bool, c byte) {
		if on {
			f = append(f, c)
		}
	}
	st := s.tracking.state
	add(len(s.subs.channels)+len(s.subs.patterns) > 0, 'P')
	add(s.txn != nil, 'x')
	add(st.on, 't')
	add(st.on && st.broken, 'R')
	add(st.on && st.bcast, 'B')
	add(s.watch != nil && s.watch.dirty, 'd')
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

func (h *Handler) clientList() string {
	var b strings.Builder
	h.sessions.Range(func(_, v any) bool {
		b.WriteString(h.clientLine(v.(*Session)))
		b.WriteByte('\n')
		return true
	})
	return b.String()
}
