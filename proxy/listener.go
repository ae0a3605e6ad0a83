package proxy

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redlockd/redlockd/internal/rawio"
)

// gateListener sits between the accept loop and the real listener. The
// loop closes every connection as soon as Accept fails; the gate holds
// that failure back until Shutdown has drained the in-flight commands. It also turns away clients over MaxClients without
// blocking the accept loop.
type gateListener struct {
	net.Listener
	srv *Server
	err error // the error that ended accepting when the server did not ask for it
}

func (g *gateListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			if !g.retry(err, &backoff) {
				return nil, net.ErrClosed
			}
			continue
		}
		backoff = 5 * time.Millisecond
		c = rawio.Wrap(c)
		if cfg := g.srv.opts.TLSConfig; cfg != nil {
			// As tls.NewListener would, over the raw socket calls.
			c = tls.Server(c, cfg)
		}
		if !g.srv.admit() {
			g.srv.reject(c)
			continue
		}
		return withWriteTimeout(c, g.srv.opts.WriteTimeout), nil
	}
}

// retry decides what an Accept error means. While the server shuts down it
// waits for the drain to finish and ends accepting; a closed listener ends
// accepting at once; anything else (EMFILE, …) is retried after a pause.
func (g *gateListener) retry(err error, backoff *time.Duration) bool {
	select {
	case <-g.srv.closing:
		<-g.srv.released
		return false
	default:
	}
	if errors.Is(err, net.ErrClosed) {
		g.err = err
		return false
	}
	g.srv.log.Warn("accept failed", "err", err, "retry_in", *backoff)
	select {
	case <-time.After(*backoff):
	case <-g.srv.closing:
	}
	*backoff = min(*backoff*2, time.Second)
	return true
}
