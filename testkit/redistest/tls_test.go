package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/testcerts"
)

// TestStartTLS: a TLS-only server answers over TLS with a client
// certificate, and refuses plain connections and clients without one.
func TestStartTLS(t *testing.T) {
	certs := testcerts.New(t)
	s := StartTLS(t, certs.ClientTLS(),
		"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey,
		"--tls-ca-cert-file", certs.CAFile, "--tls-auth-clients", "yes")
	if err := pingWithin(s, 2*time.Second); err != nil {
		t.Fatalf("PING over TLS: %v\n%s", err, s.Output())
	}
	if Ping(s.Addr(), nil) {
		t.Fatal("the TLS port answered a plain PING")
	}
	if Ping(s.Addr(), certs.ClientTLSNoCert()) {
		t.Fatal("a client without a certificate was served")
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), TLSConfig: certs.ClientTLSNoCert(), DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("go-redis without a client certificate got an answer")
	}
}
