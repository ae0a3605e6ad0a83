package main

import (
	"crypto/tls"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/redlockd/redlockd/commands"
)

// reloader applies SIGHUP: it reads the configuration again (flags and
// environment are the process's own, so in practice the --config file and
// the certificate files) and applies what can change without a restart:
//
//   - log-level;
//   - requirepass (connections that authenticated stay authenticated);
//   - the TLS certificates: the listener's certificate, key and client CA,
//     and the client certificate presented to rediss:// backends (new
//     connections use them).
//
// Every other change is logged as needing a restart and the running value
// stays. A configuration that no longer loads is logged and ignored: a
// SIGHUP never ends the process.
type reloader struct {
	args    []string
	env     func(string) string
	running Config
	level   *slog.LevelVar
	tls     *liveTLS
	handler *commands.Handler
	log     *slog.Logger
}

// onHangup reloads on every signal of hup (SIGHUP) until the returned
// stop is called.
func (r *reloader) onHangup(hup <-chan os.Signal) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				r.reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// reload is one SIGHUP.
func (r *reloader) reload() {
	next, err := loadConfig(r.args, r.env)
	if err != nil {
		r.log.Error("SIGHUP: configuration not reloaded; the running one stays", "err", err)
		return
	}
	var reloaded []string
	if next.LogLevel != r.running.LogLevel {
		_ = r.level.UnmarshalText([]byte(next.LogLevel)) // validated already
		reloaded = append(reloaded, "log-level")
	}
	if next.RequirePass != r.running.RequirePass {
		r.handler.SetPassword(next.RequirePass)
		reloaded = append(reloaded, "requirepass")
	}
	done, stale := r.tls.update(next.clientTLS, next.backendTLS)
	reloaded = append(reloaded, done...)
	if stale = append(stale, restartOnly(r.running, next)...); len(stale) > 0 {
		r.log.Warn("SIGHUP: these settings changed but take effect only at a restart; the running values stay", "settings", stale)
	}
	r.running.LogLevel, r.running.RequirePass = next.LogLevel, next.RequirePass
	for name := range reloadable {
		r.running.raw[name] = next.raw[name]
	}
	r.log.Info("SIGHUP: configuration reloaded", "reloaded", reloaded)
}

// reloadable are the settings reload applies; tls reports its own.
var reloadable = map[string]bool{
	"log-level": true, "requirepass": true,
	"tls-cert-file": true, "tls-key-file": true, "tls-ca-cert-file": true,
	"backend-tls-cert-file": true, "backend-tls-key-file": true,
}

// restartOnly names the settings whose text differs between a and b,
// other than those reload applies.
func restartOnly(a, b Config) []string {
	var out []string
	for _, s := range settings {
		if !reloadable[s.name] && a.raw[s.name] != b.raw[s.name] {
			out = append(out, s.name)
		}
	}
	return out
}

// liveTLS holds the TLS settings that a reload may replace. The listener
// and the backends are given configurations that read the current ones
// at each handshake.
type liveTLS struct {
	client        atomic.Pointer[tls.Config]      // the listener's; nil: no TLS
	backendCert   atomic.Pointer[tls.Certificate] // presented to rediss:// backends
	hasBackendCrt bool
}

// newLiveTLS puts cfg's TLS settings behind the holder, rewriting
// cfg.clientTLS and cfg.backendTLS into their live forms.
func newLiveTLS(cfg *Config) *liveTLS {
	l := &liveTLS{}
	if cfg.clientTLS != nil {
		l.client.Store(cfg.clientTLS)
		cfg.clientTLS = &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
				return l.client.Load(), nil
			},
		}
	}
	if b := cfg.backendTLS; b != nil && len(b.Certificates) > 0 {
		l.hasBackendCrt = true
		l.backendCert.Store(&b.Certificates[0])
		live := b.Clone()
		live.Certificates = nil
		live.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return l.backendCert.Load(), nil
		}
		cfg.backendTLS = live
	}
	return l
}

// update takes the certificates of a reloaded configuration where the
// running one has a place for them, and names what it replaced (done) and
// what needs a restart (stale: TLS turned on or off).
func (l *liveTLS) update(client, backend *tls.Config) (done, stale []string) {
	switch running := l.client.Load() != nil; {
	case client != nil && running:
		l.client.Store(client)
		done = append(done, "tls-cert-file", "tls-key-file")
		if client.ClientCAs != nil {
			done = append(done, "tls-ca-cert-file")
		}
	case (client != nil) != running:
		stale = append(stale, "tls-cert-file", "tls-key-file")
	}
	hasCert := backend != nil && len(backend.Certificates) > 0
	switch {
	case hasCert && l.hasBackendCrt:
		l.backendCert.Store(&backend.Certificates[0])
		done = append(done, "backend-tls-cert-file", "backend-tls-key-file")
	case hasCert != l.hasBackendCrt:
		stale = append(stale, "backend-tls-cert-file", "backend-tls-key-file")
	}
	return done, stale
}
