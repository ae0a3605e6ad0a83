package backend

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultConns is how many multiplexed connections a node opens. Redis runs
// commands on one thread, so more connections buy no parallelism there; a
// second one keeps a large reply or a reset from stalling every caller.
const defaultConns = 2

// nodeConfig says how every connection of the node is opened: the address,
// TLS, AUTH and SELECT parsed from the node's URL. connected runs on each
// new connection before it carries anything.
func nodeConfig(o *redis.Options, opts RedisOptions, connected func(context.Context, net.Conn) error) *muxConfig {
	cfg := &muxConfig{
		conns:     orDefault(opts.Conns, defaultConns),
		timeout:   orDefault(opts.DialTimeout, time.Second),
		grace:     opts.NodeTimeout,
		connected: connected,
	}
	addr, tlsConf := o.Addr, o.TLSConfig
	cfg.dial = func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || tlsConf == nil {
			return nc, err
		}
		tc := tls.Client(nc, tlsConf.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
	switch {
	case o.Username != "":
		cfg.handshake = append(cfg.handshake, []string{"auth", o.Username, o.Password})
	case o.Password != "":
		cfg.handshake = append(cfg.handshake, []string{"auth", o.Password})
	}
	if o.DB != 0 {
		cfg.handshake = append(cfg.handshake, []string{"select", strconv.Itoa(o.DB)})
	}
	// Every script is loaded on each new line, in the write of its first
	// batch and ahead of it: an EVALSHA that met NOSCRIPT would be sent
	// again behind the commands queued after it, breaking the order of
	// commands on a key. A restarted server is reached only through new
	// connections, so this leaves the EVAL fallback to a SCRIPT FLUSH on a
	// live server.
	for _, s := range allScripts {
		cfg.preload = append(cfg.preload, []string{"script", "load", s.src})
	}
	cfg.tlsConf, cfg.db = tlsConf, o.DB
	return cfg
}

func unexpected(rep reply) error {
	return fmt.Errorf("backend: unexpected reply type %q", rep.kind)
}
