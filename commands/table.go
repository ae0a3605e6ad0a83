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
	// deletes marks the writes that leave their keys absent where they
	// change them (client-side caching's NOLOOP, see ownWrite).
	deletes bool
	// keys says where the command names keys: COMMAND reports it,
	// pipelines order by it, and Exec refuses reserved keys by it.
	keys keyLayout
	// pipe says whether the command may run alongside others of a
	// pipelined batch. Every entry must say it: the table test fails on a
	// zero value, and until then Exec's callers treat it as a barrier.
	pipe pipeKind
	// mayBlock, when set, reports whether one call can wait for long
	// (args include the name); nil means never.
	mayBlock func(args [][]byte) bool
	// notQueued marks the commands that run at once between MULTI and
	// EXEC (MULTI, EXEC, DISCARD, WATCH, and those that end the
	// connection's state: QUIT, RESET); every other one is queued.
	notQueued bool
	// outcome says how the command's result counts in metrics; like pipe,
	// it has no usable zero value.
	outcome outcomeKind
	run     func(h *Handler, c *call)
	// start, when set, is the command's asynchronous form (see Start): it
	// either takes st over, ending it (started.end) once it is answered,
	// or reports false having written nothing and handed st to nobody.
	start func(h *Handler, st *started) bool
}

// pipeKind is how a command runs within a pipelined batch.
type pipeKind uint8

const (
	pipeUnset pipeKind = iota
	// pipeBarrier: reads or changes the connection's state, so it runs
	// alone, after everything before it and before anything after it.
	pipeBarrier
	// pipeConcurrent: may run at once with others that share no key.
	pipeConcurrent
)

// outcomeKind is how a command's result counts in metrics.
type outcomeKind uint8

const (
	outcomeUnset outcomeKind = iota
	// outcomePlain: a success counts as "ok".
	outcomePlain
	// outcomeAcquire: the command takes a lock, and a success counts as
	// "acquired".
	outcomeAcquire
)

// call is one command being run.
type call struct {
	s    *Session
	w    Writer
	name string   // lower-case command name
	args [][]byte // arguments after the name
}

func (c *call) arg(i int) string { return string(c.args[i]) }

// argPair is arguments i and j as strings that allocate nothing of
// their own (see keptStrings): the key and token that a lock's round keeps.
func (c *call) argPair(i, j int) (string, string) {
	return c.s.kept.pair(c.args[i], c.args[j])
}

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

// Exec runs one command of session s and writes its reply to w. The
// caller may reuse args once Exec has returned (the proxy's arguments
// point into its read buffer): a command copies what it keeps.
func (h *Handler) Exec(s *Session, args [][]byte, w Writer) { h.Run(s, NewRequest(args), w) }

// Run runs a request of session s and writes its reply to w; like Exec,
// it keeps nothing of r.Args once it has returned.
func (h *Handler) Run(s *Session, r Request, w Writer) {
	args := r.Args
	if len(args) == 0 {
		return
	}
	cmd := r.cmd
	if cmd == nil {
		s.failTxn()
		w.WriteError(errUnknownCommand(string(args[0]), args[1:]))
		return
	}
	if msg := refusal(s, cmd, args); msg != "" {
		s.failTxn()
		w.WriteError(msg)
		return
	}
	if !cmd.notQueued && s.InTransaction() {
		if msg := reservedRefusal(cmd, args); msg != "" {
			s.failTxn()
			w.WriteError(msg)
			return
		}
		if msg, ok := s.queue(cmd, args); ok {
			if msg != "" {
				w.WriteError(msg)
			} else {
				w.WriteSimple("QUEUED")
			}
			return
		}
	}
	h.dispatch(s, cmd, args, w)
	s.commandDone(cmd)
}

// dispatch runs a command that passed refusal (args with the name
// first): Run's and EXEC's one path. The keys of a read are tracked for
// the connection's client-side caching from before the read starts until
// it has its answer.
func (h *Handler) dispatch(s *Session, cmd *command, args [][]byte, w Writer) {
	h.stats.commands.Add(1)
	h.ownWrite(s, cmd, args)
	if keys := trackedKeys(s, cmd, args); keys != nil {
		h.tracking.Begin(s, keys)
		defer h.tracking.End(s, keys)
	}
	if o := h.opts.Observer; o != nil {
		h.runObserved(o, cmd, args, &observedCall{call: call{s: s, name: cmd.name, args: args[1:]}, ow: outcomeWriter{Writer: w}})
		return
	}
	h.runChecked(cmd, args, &call{s: s, w: w, name: cmd.name, args: args[1:]})
}

// trackedKeys are the keys of a command that client-side caching
// remembers for s: those of a command that reads, or of a script (Redis
// remembers what the script's commands read; every key is a spare at
// worst); nil when none.
func trackedKeys(s *Session, cmd *command, args [][]byte) []string {
	if cmd.keys == keysNone || (cmd.write && cmd.keys != keysEval) || !s.tracksReads() {
		return nil
	}
	keys, _ := keyArgs(cmd.keys, args)
	if len(keys) == 0 {
		return nil
	}
	return strs(keys)
}

// refusal is the error a request gets before it runs (a bad arity, no
// login), "" when it may run. Redis checks the arity before the login: a
// malformed command gets the same error whether or not the client
// authenticated.
func refusal(s *Session, cmd *command, args [][]byte) string {
	if !arityOK(cmd.arity, len(args)) {
		return errArity(cmd.name)
	}
	if !cmd.noAuth && !s.Authenticated() {
		return msgNoAuth
	}
	return subscribedRefusal(s, cmd, args)
}

// observedCall is a call whose reply is watched for the Observer, in one
// allocation.
type observedCall struct {
	call
	ow outcomeWriter
}

func (h *Handler) runObserved(o Observer, cmd *command, args [][]byte, oc *observedCall) {
	oc.w = &oc.ow
	t0 := time.Now()
	h.runChecked(cmd, args, &oc.call)
	o.CommandDone(cmd.name, oc.ow.outcome(cmd), time.Since(t0), nil)
}

// runChecked runs c (args with the name first) unless it names the
// reserved namespace. That is checked before the command parses anything
// else, as Redis checks a key's permission: a reserved key or value
// changes nothing on any backend.
func (h *Handler) runChecked(cmd *command, args [][]byte, c *call) {
	if msg := reservedRefusal(cmd, args); msg != "" {
		c.w.WriteError(msg)
		return
	}
	cmd.run(h, c)
}
