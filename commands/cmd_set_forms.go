package commands

import "fmt"

// setForm handles the SET forms other than "NX with an expiry". It reports
// whether it wrote the reply.
func (h *Handler) setForm(c *call, o setOpts) bool {
	switch {
	case o.get:
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "GET is not a lock operation"))
	case o.ifeq != nil:
		h.setIfEq(c, o)
	case !o.nx && !o.xx && !o.keepTTL && o.ttl > 0:
		h.forceSet(c, o)
	case o.keepTTL || o.xx:
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "use SET key token NX PX ms, or RENEW to extend"))
	case !o.nx:
		h.sessionSet(c, true) // a forced takeover without expiry: a session lock
	case o.ttl == 0:
		h.sessionSet(c, false)
	default:
		return false
	}
	return true
}
