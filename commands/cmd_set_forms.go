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
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "a lock is taken with SET key token NX PX ms"))
	case o.ttl == 0:
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "a lock needs an expiry: SET key token NX PX ms"))
	default:
		return false
	}
	return true
}
