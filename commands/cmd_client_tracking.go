package commands

import (
	"fmt"
	"slices"
	"strings"
)

// trackingOpts are the options of CLIENT TRACKING ON|OFF […].
type trackingOpts struct {
	bcast, optin, optout, noloop bool
	redirect                     int64
	prefixes                     []string
}

// parseTracking reads the options after ON|OFF as Redis does, writing
// its error on failure.
func (h *Handler) parseTracking(c *call) (trackingOpts, bool) {
	var o trackingOpts
	for i := 2; i < len(c.args); i++ {
		more := i+1 < len(c.args)
		switch opt := strings.ToUpper(c.arg(i)); {
		case opt == "REDIRECT" && more:
			i++
			if o.redirect != 0 {
				c.w.WriteError("ERR A client can only redirect to a single other client")
				return o, false
			}
			id, ok := parseInt(c.arg(i))
			if !ok {
				c.w.WriteError(msgNotInt)
				return o, false
			}
			if _, found := h.sessions.Load(id); !found {
				c.w.WriteError("ERR The client ID you want redirect to does not exist")
				return o, false
			}
			o.redirect = id
		case opt == "BCAST":
			o.bcast = true
		case opt == "OPTIN":
			o.optin = true
		case opt == "OPTOUT":
			o.optout = true
		case opt == "NOLOOP":
			o.noloop = true
		case opt == "PREFIX" && more:
			i++
			o.prefixes = append(o.prefixes, c.arg(i))
		default:
			c.w.WriteError(msgSyntax)
			return o, false
		}
	}
	return o, true
}

// clientTracking: CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p …]
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP], with Redis 7's checks in its order.
func (h *Handler) clientTracking(c *call) {
	o, ok := h.parseTracking(c)
	if !ok {
		return
	}
	switch {
	case strings.EqualFold(c.arg(1), "off"):
		h.trackingOff(c.s)
		c.w.WriteSimple("OK")
	case !strings.EqualFold(c.arg(1), "on"):
		c.w.WriteError(msgSyntax)
	default:
		if msg := h.trackingOn(c.s, o); msg != "" {
			c.w.WriteError(msg)
			return
		}
		c.w.WriteSimple("OK")
	}
}

// trackingOn turns tracking on with o, or returns Redis's refusal.
func (h *Handler) trackingOn(s *Session, o trackingOpts) string {
	s.mu.Lock()
	st := s.tracking.state
	s.mu.Unlock()
	switch {
	case !o.bcast && len(o.prefixes) > 0:
		return "ERR PREFIX option requires BCAST mode to be enabled"
	case st.on && st.bcast != o.bcast:
		return "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	case o.bcast && (o.optin || o.optout):
		return "ERR OPTIN and OPTOUT are not compatible with BCAST"
	case o.optin && o.optout:
		return "ERR You can't specify both OPTIN mode and OPTOUT mode"
	case (o.optin && st.optout) || (o.optout && st.optin):
		return "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	}
	if o.bcast {
		if msg := prefixCollision(st.prefixes, o.prefixes); msg != "" {
			return msg
		}
	}
	next := trackState{on: true, bcast: o.bcast, optin: o.optin, optout: o.optout, noloop: o.noloop,
		redirect: o.redirect, caching: st.caching}
	if o.bcast {
		// As Redis keeps them: a set (BCAST without PREFIX adds "",
		// every key, once), listed in order.
		next.prefixes = append(append([]string{}, st.prefixes...), o.prefixes...)
		if len(o.prefixes) == 0 && !slices.Contains(next.prefixes, "") {
			next.prefixes = append(next.prefixes, "")
		}
		slices.Sort(next.prefixes)
	}
	s.mu.Lock()
	s.tracking.state = next
	s.tracking.lookup = h.session
	s.mu.Unlock()
	s.tracking.enabled.Store(true)
	if o.bcast {
		h.tracking.Broadcast(s, next.prefixes)
	}
	return ""
}

// prefixCollision is Redis's refusal of BCAST prefixes of which one
// starts another, "" when there is none. An existing "" (BCAST without
// PREFIX: every key) starts every prefix, so Redis refuses any prefix
// given after it.
func prefixCollision(existing, given []string) string {
	for i, p := range given {
		for _, q := range existing {
			if prefixOverlap(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", p, q)
			}
		}
		for _, q := range given[i+1:] {
			if prefixOverlap(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", p, q)
			}
		}
	}
	return ""
}

// trackingOff ends the session's tracking and forgets its keys.
func (h *Handler) trackingOff(s *Session) {
	s.tracking.enabled.Store(false)
	s.mu.Lock()
	s.tracking.state = trackState{}
	s.mu.Unlock()
	h.tracking.Forget(s)
}

// clientCaching: CLIENT CACHING YES|NO, for the next command.
func (h *Handler) clientCaching(c *call) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.tracking.state
	switch opt := strings.ToUpper(c.arg(1)); {
	case !st.on:
		c.w.WriteError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	case opt == "YES" && !st.optin:
		c.w.WriteError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	case opt == "NO" && !st.optout:
		c.w.WriteError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	case opt == "YES":
		st.caching = 1
		c.w.WriteSimple("OK")
	case opt == "NO":
		st.caching = -1
		c.w.WriteSimple("OK")
	default:
		c.w.WriteError(msgSyntax)
	}
}

// clientTrackingInfo: CLIENT TRACKINGINFO, a map of flags, redirect and
// prefixes.
func (h *Handler) clientTrackingInfo(c *call) {
	c.s.mu.Lock()
	st := c.s.tracking.state
	c.s.mu.Unlock()
	c.w.WriteMap(3)
	c.w.WriteBulkString("flags")
	flags := st.flags()
	c.w.WriteSet(len(flags))
	for _, f := range flags {
		c.w.WriteBulkString(f)
	}
	c.w.WriteBulkString("redirect")
	c.w.WriteInt(redirectOf(st))
	c.w.WriteBulkString("prefixes")
	c.w.WriteArray(len(st.prefixes))
	for _, p := range st.prefixes {
		c.w.WriteBulkString(p)
	}
}

// clientGetRedir: CLIENT GETREDIR, -1 when tracking is off, 0 without
// REDIRECT.
func (h *Handler) clientGetRedir(c *call) {
	c.s.mu.Lock()
	st := c.s.tracking.state
	c.s.mu.Unlock()
	c.w.WriteInt(redirectOf(st))
}

func redirectOf(st trackState) int64 {
	if !st.on {
		return -1
	}
	return st.redirect
}

// session finds a live session by ID.
func (h *Handler) session(id int64) (*Session, bool) {
	v, ok := h.sessions.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*Session), true
}
