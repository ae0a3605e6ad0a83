package commands

import (
	"time"
)

// command is one entry of the command table.
type command struct {
	name string
	// arity follows Redis: n > 0 means exactly n arguments including the
	// name; n < 0 means at least -n.
	arity int
	// noAuth marks commands allowed before AUTH.
	noAuth bool
	// write marks commands that change backend state (for COMMAND's flags).
	write bool
	// keys says where the command names keys: COMMAND reports it,
	// pipelines order by it, and Exec refuses reserved keys by it.
	keys keyLayout
	run  func(h *Handler, c *call)
}

// call is one command being run.
type call struct {
	s    *Session
	w    Writer
	name string   // lower-case command name
	args [][]byte // arguments after the name
}

func (c *call) arg(i int) string { return string(c.args[i]) }

var table = map[string]*command{}

func register(cmds ...*command) {
	for _, c := range cmds {
		table[c.name] = c
	}
}

func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// Exec runs one command of session s and writes its reply to w.
func (h *Handler) Exec(s *Session, args [][]byte, w Writer) {
	if len(args) == 0 {
		return
	}
	cmd, ok := lookup(args[0])
	if !ok {
		w.WriteError(errUnknownCommand(string(args[0]), args[1:]))
		return
	}
	name := cmd.name
	// Redis checks the arity before the login: a malformed command gets
	// the same error whether or not the client authenticated.
	if !arityOK(cmd.arity, len(args)) {
		w.WriteError(errArity(name))
		return
	}
	if !cmd.noAuth && !s.Authenticated() {
		w.WriteError(msgNoAuth)
		return
	}
	h.stats.commands.Add(1)
	if o := h.opts.Observer; o != nil {
		ow, t0 := &outcomeWriter{Writer: w}, time.Now()
		defer func() { o.CommandDone(name, ow.outcome(name), time.Since(t0)) }()
		w = ow
	}
	// Checked before the command parses anything else, as Redis checks a
	// key's permission: a reserved key changes nothing on any backend.
	if namesReservedKey(cmd.keys, args) {
		w.WriteError(msgReservedKey)
		return
	}
	cmd.run(h, &call{s: s, w: w, name: name, args: args[1:]})
}
