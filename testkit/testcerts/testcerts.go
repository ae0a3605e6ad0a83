// Package testcerts generates, for one test, a certificate authority with a
// server certificate for 127.0.0.1 and a client certificate signed by it,
// written as PEM files to the test's temporary directory. Keys are ECDSA
// P-256; everything is valid for a day around now.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Set is one CA with the certificates it signed, and the files holding them.
type Set struct {
	CAFile                string
	ServerCert, ServerKey string // for 127.0.0.1 (IP SAN) and "localhost"
	ClientCert, ClientKey string
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	pool                  *x509.CertPool
	server, client        tls.Certificate
	serialNo              int64
}

// New generates a fresh CA, server and client certificate.
func New(t testing.TB) *Set {
	t.Helper()
	dir := t.TempDir()
	s := &Set{
		CAFile:     filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	s.caKey = newKey(t)
	caTmpl := s.template("redlockd test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der := sign(t, caTmpl, caTmpl, &s.caKey.PublicKey, s.caKey)
	s.ca, _ = x509.ParseCertificate(der)
	s.pool = x509.NewCertPool()
	s.pool.AddCert(s.ca)
	writePEM(t, s.CAFile, "CERTIFICATE", der)

	srv := s.template("127.0.0.1")
	srv.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	srv.DNSNames = []string{"localhost"}
	srv.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	s.server = s.issue(t, srv, s.ServerCert, s.ServerKey)

	cli := s.template("redlockd test client")
	cli.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	s.client = s.issue(t, cli, s.ClientCert, s.ClientKey)
	return s
}

// ClientTLS trusts the CA and presents the client certificate.
func (s *Set) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.pool, Certificates: []tls.Certificate{s.client}}
}

// ClientTLSNoCert trusts the CA but presents no certificate.
func (s *Set) ClientTLSNoCert() *tls.Config { return &tls.Config{RootCAs: s.pool} }

// ServerTLS presents the server certificate; with verifyClients it also
// requires a client certificate signed by the CA.
func (s *Set) ServerTLS(verifyClients bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{s.server}}
	if verifyClients {
		c.ClientCAs, c.ClientAuth = s.pool, tls.RequireAndVerifyClientCert
	}
	return c
}

func (s *Set) template(cn string) *x509.Certificate {
	s.serialNo++
	return &x509.Certificate{
		SerialNumber: big.NewInt(s.serialNo),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-12 * time.Hour),
		NotAfter:     time.Now().Add(12 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

func (s *Set) issue(t testing.TB, tmpl *x509.Certificate, certFile, keyFile string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	der := sign(t, tmpl, s.ca, &key.PublicKey, s.caKey)
	writePEM(t, certFile, "CERTIFICATE", der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, pub, priv any) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
