package backend

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/internal/rawio"
)

// defaultConns is how many multiplexed connections a node opens. Redis runs
// commands on one thread, so more connections buy no parallelism there,
// and every line costs a write and a read per batch of its own: with one
// line a batch holds the commands that two lines would split between two
// writes. A second line would keep a large reply or a reset from stalling
// the keys that hash to the first, but not the others; the quorum already
// rides over one slow node.
const defaultConns = 1

// nodeConfig says how every connection of the node is opened: the address,
// TLS, AUTH and SELECT parsed from the node's URL. connected runs on each
// new connection before it carries anything.
func nodeConfig(o *redis.Options, opts RedisOptions, connected func(context.Context, net.Conn) error) *wire.Config {
	cfg := &wire.Config{
		Conns:     orDefault(opts.Conns, defaultConns),
		Timeout:   orDefault(opts.DialTimeout, time.Second),
		Grace:     opts.NodeTimeout,
		Connected: connected,
	}
	addr, tlsConf := o.Addr, o.TLSConfig
	cfg.Dial = func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || tlsConf == nil {
			return nc, err
		}
		// TLS's own reads and writes go through the raw socket calls of
		// internal/rawio, as a plain connection's do (wire wraps those).
		tc := tls.Client(rawio.Wrap(nc), tlsConf.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
	switch {
	case o.Username != "":
		cfg.Handshake = append(cfg.Handshake, []string{"auth", o.Username, o.Password})
	case o.Password != "":
		cfg.Handshake = append(cfg.Handshake, []string{"auth", o.Password})
	}
	if o.DB != 0 {
		cfg.Handshake = append(cfg.Handshake, []string{"select", strconv.Itoa(o.DB)})
	}
	// Every script is loaded on each new line, in the write of its first
	// batch and ahead of it: an EVALSHA that met NOSCRIPT would be sent
	// again behind the commands queued after it, breaking the order of
	// commands on a key. A restarted server is reached only through new
	// connections, so this leaves the EVAL fallback to a SCRIPT FLUSH on a
	// live server.
	for _, s := range allScripts {
		cfg.Preload = append(cfg.Preload, []string{"script", "load", s.src})
	}
	cfg.TLSConfig, cfg.DB = tlsConf, o.DB
	return cfg
}

func unexpected(rep wire.Reply) error {
	return fmt.Errorf("backend: unexpected reply type %q", rep.Kind)
}
