package backend

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// A Redis node serves the quorum's databases (quorum.DBs of them, SELECT's
// 0 to 15) with one multiplexer each: a connection selects its database
// once, in its handshake, so every command it carries needs no SELECT of
// its own, and commands on one key of one database keep their order on
// one line. Database 0 is the node's main multiplexer, warmed when a
// Cluster starts watching the node; the others are made on first use and
// connect (handshake, SELECT, script preload) with their first command.
//
// The backend URL's own database (redis://host/d) is where database 0's
// keys live, as it always was; database n > 0 is the server's db n. The
// lock horizon (quorum.HorizonKey) is the server's, not a database's: it
// lives in the server's db 0 whatever the URL names, so that every proxy
// in front of the server finds the same one.

// dbLines holds the multiplexers of databases 1 to quorum.DBs-1, and in
// slot 0 the one of the server's db 0 where the URL names another.
type dbLines struct {
	base  wire.Config // database 0's settings, which the others copy
	muxes [quorum.DBs]atomic.Pointer[wire.Mux]

	mu     sync.Mutex // guards making a multiplexer, and closed
	closed bool
}

// muxFor returns the multiplexer of database db, making it on first use.
// After close it returns database 0's, closed too, so that the command
// fails with ErrClosed as any other does.
func (r *Redis) muxFor(db int) (*wire.Mux, error) {
	if db == 0 {
		return r.mux, nil
	}
	if db < 0 || db >= quorum.DBs {
		return nil, fmt.Errorf("%w: %d", ErrBadDB, db)
	}
	return r.dbMux(db), nil
}

// muxOf is the multiplexer cmd runs on: its database's, or for the lock
// horizon the server's db 0's.
func (r *Redis) muxOf(cmd *quorum.Cmd) (*wire.Mux, error) {
	if IsServerWide(cmd.Kind) {
		return r.horizonMux(), nil
	}
	return r.muxFor(cmd.DB)
}

// horizonMux is the multiplexer of the server's db 0, where the lock
// horizon lives.
func (r *Redis) horizonMux() *wire.Mux {
	if r.dbs.base.DB == 0 {
		return r.mux
	}
	return r.dbMux(0)
}

// dbMux returns the multiplexer in slot n of the server's db n, making it
// on first use (see muxFor for after close).
func (r *Redis) dbMux(n int) *wire.Mux {
	if m := r.dbs.muxes[n].Load(); m != nil {
		return m
	}
	d := &r.dbs
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return r.mux
	}
	if m := d.muxes[n].Load(); m != nil {
		return m
	}
	m := wire.NewMux(forDB(d.base, n))
	d.muxes[n].Store(m)
	return m
}

// close closes every database's multiplexer but database 0's (Redis.Close
// closes that one); none is made afterwards.
func (d *dbLines) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	for i := range d.muxes {
		if m := d.muxes[i].Load(); m != nil {
			m.Close()
		}
	}
}

// forDB is cfg for the connections of database db: the same login, then
// SELECT db in place of the URL's database.
func forDB(cfg wire.Config, db int) wire.Config {
	hs := slices.DeleteFunc(slices.Clone(cfg.Handshake), func(c []string) bool { return c[0] == "select" })
	cfg.Handshake = append(hs, []string{"select", strconv.Itoa(db)})
	cfg.DB = db
	return cfg
}

// serverDB is the server's database that holds the quorum's database db,
// for a node whose URL names base.
func serverDB(base, db int) int {
	if db == 0 {
		return base
	}
	return db
}
