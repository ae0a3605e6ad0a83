package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/testcerts"
)

// tlsClient is a go-redis client of r over TLS that does not retry, so a
// refused handshake fails at once.
func tlsClient(t *testing.T, addr string, conf *tls.Config) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: conf, MaxRetries: -1, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func pingErr(c *redis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// TestRunTLSListener: with a certificate and key, --listen speaks TLS:
// a client trusting the CA is served (RESP3 and RESP2), a plain client
// and a client trusting another CA are not.
func TestRunTLSListener(t *testing.T) {
	certs := testcerts.New(t)
	r := start(t, "--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey)
	for _, proto := range []int{3, 2} {
		c := redis.NewClient(&redis.Options{Addr: r.addr, TLSConfig: certs.ClientTLSNoCert(), Protocol: proto})
		lockOnce(t, c, fmt.Sprintf("tls-%d", proto))
		c.Close()
	}
	if err := pingErr(r.client(t)); err == nil {
		t.Fatal("a plain client was served by the TLS listener")
	}
	other := testcerts.New(t)
	if err := pingErr(tlsClient(t, r.addr, other.ClientTLSNoCert())); err == nil {
		t.Fatal("a client trusting another CA accepted the certificate")
	}
	if !r.logged("INFO", "ready to accept connections") {
		t.Fatal("no ready line")
	}
	if code := r.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestRunTLSClientCertificates: with --tls-ca-cert-file a client must
// present a certificate signed by that CA.
func TestRunTLSClientCertificates(t *testing.T) {
	certs := testcerts.New(t)
	r := start(t, "--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey,
		"--tls-ca-cert-file", certs.CAFile)
	lockOnce(t, tlsClient(t, r.addr, certs.ClientTLS()), "mtls")
	if err := pingErr(tlsClient(t, r.addr, certs.ClientTLSNoCert())); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	other := testcerts.New(t)
	foreign := certs.ClientTLSNoCert()
	foreign.Certificates = other.ClientTLS().Certificates
	if err := pingErr(tlsClient(t, r.addr, foreign)); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
}

// TestRunRedissBackends: rediss:// backends that require client
// certificates, reached with the backend TLS flags; the lock lands on
// every backend.
func TestRunRedissBackends(t *testing.T) {
	certs := testcerts.New(t)
	var urls []string
	var servers []*redistest.Server
	for range 3 {
		s := redistest.StartTLS(t, certs.ClientTLS(),
			"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey,
			"--tls-ca-cert-file", certs.CAFile, "--tls-auth-clients", "yes")
		servers = append(servers, s)
		urls = append(urls, "rediss://"+s.Addr())
	}
	r := start(t, "--backends", strings.Join(urls, ","), "--node-timeout", "500ms",
		"--backend-tls-ca-cert-file", certs.CAFile,
		"--backend-tls-cert-file", certs.ClientCert, "--backend-tls-key-file", certs.ClientKey)
	res := lockOnce(t, r.client(t), "over-tls")
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := s.Client().Get(ctx, "over-tls").Result()
		cancel()
		if err != nil || v != res[0] {
			t.Fatalf("backend %s holds %q, %v; want the token %v", s.Addr(), v, err, res[0])
		}
	}
	if r.logged("WARN", "unreachable") {
		t.Fatalf("a TLS backend was unreachable: %v", r.entries())
	}
}

// TestRunRedissWithoutClientCertificate: a backend that requires client
// certificates votes no when redlockd presents none; one that does not
// require them is reached with the CA alone.
func TestRunRedissWithoutClientCertificate(t *testing.T) {
	certs := testcerts.New(t)
	args := []string{"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", certs.CAFile}
	open := redistest.StartTLS(t, certs.ClientTLSNoCert(), append(args, "--tls-auth-clients", "no")...)
	strict := redistest.StartTLS(t, certs.ClientTLS(), append(args, "--tls-auth-clients", "yes")...)
	r := start(t, "--backends", "rediss://"+open.Addr()+",rediss://"+strict.Addr(), "--node-timeout", "500ms",
		"--backend-tls-ca-cert-file", certs.CAFile)
	if !r.logged("WARN", "unreachable") {
		t.Fatalf("the backend that wants a client certificate was not reported unreachable: %v", r.entries())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.client(t).Do(ctx, "LOCK", "k", "1000").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM 1 of 2") {
		t.Fatalf("LOCK with one of two backends reachable = %v, want NOQUORUM 1 of 2", err)
	}
}

func TestRunTLSFileErrors(t *testing.T) {
	certs := testcerts.New(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing cert", []string{"--tls-cert-file", "/nonexistent/c.crt", "--tls-key-file", certs.ServerKey},
			`invalid --tls-cert-file "/nonexistent/c.crt": no such file or directory`},
		{"cert without key", []string{"--tls-cert-file", certs.ServerCert},
			`invalid --tls-cert-file "` + certs.ServerCert + `": needs --tls-key-file`},
		{"ca without cert", []string{"--tls-ca-cert-file", certs.CAFile},
			`invalid --tls-ca-cert-file "` + certs.CAFile + `": needs --tls-cert-file and --tls-key-file`},
		{"key of another cert", []string{"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ClientKey},
			`invalid --tls-cert-file "` + certs.ServerCert + `" with --tls-key-file`},
		{"garbage ca", []string{"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", garbage},
			`invalid --tls-ca-cert-file "` + garbage + `": no PEM certificate in it`},
		{"backend key without cert", []string{"--backend-tls-key-file", certs.ClientKey},
			`invalid --backend-tls-key-file "` + certs.ClientKey + `": needs --backend-tls-cert-file`},
		{"missing backend ca", []string{"--backend-tls-ca-cert-file", "/nonexistent/ca.crt"},
			`invalid --backend-tls-ca-cert-file "/nonexistent/ca.crt": no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, envOf(nil), &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "redlockd: "+tt.want) {
				t.Fatalf("stderr %q: want one line starting %q", stderr.String(), "redlockd: "+tt.want)
			}
		})
	}
}

func TestTLSFromEnvAndFile(t *testing.T) {
	certs := testcerts.New(t)
	file := writeYAML(t, fmt.Sprintf("tls-key-file: %s\nbackend-tls-insecure-skip-verify: true\n", certs.ServerKey))
	c, err := loadConfig([]string{"--config", file}, envOf(map[string]string{"REDLOCKD_TLS_CERT_FILE": certs.ServerCert}))
	if err != nil {
		t.Fatal(err)
	}
	if c.clientTLS == nil || len(c.clientTLS.Certificates) != 1 || c.clientTLS.ClientAuth != tls.NoClientCert {
		t.Fatalf("listener TLS = %+v", c.clientTLS)
	}
	if c.backendTLS == nil || !c.backendTLS.InsecureSkipVerify {
		t.Fatalf("backend TLS = %+v", c.backendTLS)
	}
	c, err = loadConfig([]string{"--backend-tls-insecure-skip-verify"}, envOf(nil))
	if err != nil || c.backendTLS == nil || !c.backendTLS.InsecureSkipVerify {
		t.Fatalf("bare bool flag: %+v, %v", c.backendTLS, err)
	}
}

func TestExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6380": false, "[::1]:6380": false, "0.0.0.0:6380": true, "[::]:6380": true, "10.1.2.3:6380": true,
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := exposed(a); got != want {
			t.Errorf("exposed(%s) = %v, want %v", addr, got, want)
		}
	}
}
