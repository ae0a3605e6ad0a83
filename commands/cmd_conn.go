package commands

import (
	"crypto/subtle"
	"strings"

	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(
		&command{name: "ping", arity: -1, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdPing},
		&command{name: "echo", arity: 2, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEcho},
		&command{name: "quit", arity: -1, noAuth: true, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdQuit},
		&command{name: "reset", arity: 1, noAuth: true, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdReset},
		&command{name: "select", arity: 2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdSelect},
		&command{name: "auth", arity: -2, noAuth: true, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdAuth},
		&command{name: "hello", arity: -1, noAuth: true, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdHello},
		&command{name: "readonly", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdNoCluster},
		&command{name: "readwrite", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdNoCluster},
	)
}

// cmdNoCluster: READONLY and READWRITE, which a cluster client sends, get
// what a Redis without cluster support answers: redlockd is one node to
// its clients, whatever its backends are.
func (h *Handler) cmdNoCluster(c *call) {
	c.w.WriteError("ERR This instance has cluster support disabled")
}

func (h *Handler) cmdPing(c *call) {
	if c.s.subscribedRESP2() && len(c.args) <= 1 {
		// A subscribed RESP2 connection reads only arrays.
		c.w.WriteArray(2)
		c.w.WriteBulkString("pong")
		c.w.WriteBulk(firstArg(c.args))
		return
	}
	switch len(c.args) {
	case 0:
		c.w.WriteSimple("PONG")
	case 1:
		c.w.WriteBulk(c.args[0])
	default:
		c.w.WriteError(errArity(c.name))
	}
}

func (h *Handler) cmdEcho(c *call) { c.w.WriteBulk(c.args[0]) }

func (h *Handler) cmdQuit(c *call) {
	c.s.mu.Lock()
	c.s.quit = true
	c.s.mu.Unlock()
	c.w.WriteSimple("OK")
}

// cmdReset returns the connection to its state right after connecting, as
// Redis's RESET does. The locks bound to the connection (KEEPALIVE, session
// locks) are released as if it had closed: a fresh connection holds none,
// and a pool that resets a connection before handing it to someone else
// must not pass locks along that nobody would release.
func (h *Handler) cmdReset(c *call) {
	h.trackingOff(c.s)
	h.endTxn(c.s)
	h.unsubscribeAll(c.s)
	h.releaseSessionLocks(c.s)
	c.s.mu.Lock()
	c.s.proto.Store(2)
	c.s.db.Store(0)
	c.s.name = ""
	c.s.authed = h.currentPassword() == ""
	c.s.mu.Unlock()
	c.w.WriteSimple("RESET")
}

// cmdSelect: SELECT db. The connection's locks live in that database of
// every backend from the next command on: it is a barrier, so nothing of
// the connection runs across it.
func (h *Handler) cmdSelect(c *call) {
	n, ok := parseInt(c.arg(0))
	switch {
	case !ok:
		c.w.WriteError(msgNotInt)
	case n < 0 || n >= quorum.DBs:
		c.w.WriteError(msgDBIndex)
	default:
		c.s.setDB(int(n))
		c.w.WriteSimple("OK")
	}
}

// cmdAuth: AUTH [user] password. The only user is "default".
func (h *Handler) cmdAuth(c *call) {
	if len(c.args) > 2 {
		c.w.WriteError(msgSyntax)
		return
	}
	user, pass := "default", c.arg(0)
	if len(c.args) == 2 {
		user, pass = c.arg(0), c.arg(1)
	} else if h.currentPassword() == "" {
		c.w.WriteError(msgNoPassword)
		return
	}
	if msg, ok := h.authenticate(c.s, user, pass); !ok {
		c.w.WriteError(msg)
		return
	}
	c.w.WriteSimple("OK")
}

// SetPassword changes the password clients must AUTH with ("" = none),
// for connections that authenticate from now on: a connection that has
// authenticated stays so, as on Redis after CONFIG SET requirepass.
func (h *Handler) SetPassword(p string) { h.password.Store(&p) }

func (h *Handler) currentPassword() string { return *h.password.Load() }

// authenticate checks a user and password in constant time. Without
// --requirepass the default user takes any password, as Redis's "nopass"
// default user does (AUTH default x, HELLO 3 AUTH default x: OK).
func (h *Handler) authenticate(s *Session, user, pass string) (string, bool) {
	want := h.currentPassword()
	okPass := want == "" || subtle.ConstantTimeCompare([]byte(pass), []byte(want)) == 1
	if !okPass || user != "default" {
		return msgWrongPass, false
	}
	s.setAuthenticated(true)
	return "", true
}

// cmdHello: HELLO [protover [AUTH user pass] [SETNAME name]].
func (h *Handler) cmdHello(c *call) {
	proto := c.s.Proto()
	if len(c.args) > 0 {
		v, ok := parseInt(c.arg(0))
		if !ok {
			c.w.WriteError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.WriteError(msgNoProto)
			return
		}
		proto = int(v)
	}
	name, setName, ok := h.helloOptions(c)
	if !ok {
		return
	}
	if !c.s.Authenticated() {
		c.w.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		c.s.setName(name)
	}
	c.s.setProto(proto)
	h.writeHello(c, proto)
}

// helloOptions parses and applies HELLO's AUTH, and validates SETNAME.
func (h *Handler) helloOptions(c *call) (name string, setName, ok bool) {
	for i := 1; i < len(c.args); i++ {
		opt := strings.ToUpper(c.arg(i))
		switch {
		case opt == "AUTH" && i+2 < len(c.args):
			if msg, good := h.authenticate(c.s, c.arg(i+1), c.arg(i+2)); !good {
				c.w.WriteError(msg)
				return "", false, false
			}
			i += 2
		case opt == "SETNAME" && i+1 < len(c.args):
			name, setName = c.arg(i+1), true
			if !validClientName(name) {
				c.w.WriteError(msgBadName)
				return "", false, false
			}
			i++
		default:
			c.w.WriteError("ERR Syntax error in HELLO option '" + c.arg(i) + "'")
			return "", false, false
		}
	}
	return name, setName, true
}

// writeHello writes the server's description, a map in RESP3 and a flat
// array in RESP2, with Redis 7.2's fields and nothing more: clients
// enable commands by "server" and "version", and some compare the reply
// with Redis's. redlockd's own version is INFO server's redlockd_version.
func (h *Handler) writeHello(c *call, proto int) {
	w := c.w
	w.WriteMap(7)
	w.WriteBulkString("server")
	w.WriteBulkString("redis")
	w.WriteBulkString("version")
	w.WriteBulkString(RedisVersion)
	w.WriteBulkString("proto")
	w.WriteInt(int64(proto))
	w.WriteBulkString("id")
	w.WriteInt(c.s.ID)
	w.WriteBulkString("mode")
	w.WriteBulkString("standalone")
	w.WriteBulkString("role")
	w.WriteBulkString("master")
	w.WriteBulkString("modules")
	w.WriteArray(0)
}

// RedisVersion is the Redis version redlockd answers like, reported by
// HELLO and INFO so that clients enable the commands it supports.
const RedisVersion = "7.2.0"

func validClientName(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] < '!' || n[i] > '~' {
			return false
		}
	}
	return true
}
