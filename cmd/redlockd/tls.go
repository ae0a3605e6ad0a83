package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// loadTLS reads the certificate files named by the configuration into the
// listener's and the backends' TLS settings. Its errors are one line
// naming the flag whose file is bad.
func (c *Config) loadTLS() error {
	var err error
	if c.clientTLS, err = listenerTLS(c); err != nil {
		return err
	}
	c.backendTLS, err = backendTLS(c)
	return err
}

func listenerTLS(c *Config) (*tls.Config, error) {
	if c.TLSCertFile == "" && c.TLSKeyFile == "" {
		if c.TLSCACertFile != "" {
			return nil, fmt.Errorf("invalid --tls-ca-cert-file %q: needs --tls-cert-file and --tls-key-file", c.TLSCACertFile)
		}
		return nil, nil
	}
	cert, err := keyPair("tls-", c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSCACertFile != "" {
		if conf.ClientCAs, err = certPool("tls-ca-cert-file", c.TLSCACertFile); err != nil {
			return nil, err
		}
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

// backendTLS is nil unless a backend TLS flag was given: rediss://
// backends then verify against the system roots.
func backendTLS(c *Config) (*tls.Config, error) {
	if c.BackendTLSCACertFile == "" && c.BackendTLSCertFile == "" && c.BackendTLSKeyFile == "" && !c.BackendTLSInsecureSkipVerify {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.BackendTLSInsecureSkipVerify}
	if c.BackendTLSCACertFile != "" {
		var err error
		if conf.RootCAs, err = certPool("backend-tls-ca-cert-file", c.BackendTLSCACertFile); err != nil {
			return nil, err
		}
	}
	if c.BackendTLSCertFile != "" || c.BackendTLSKeyFile != "" {
		cert, err := keyPair("backend-tls-", c.BackendTLSCertFile, c.BackendTLSKeyFile)
		if err != nil {
			return nil, err
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// keyPair loads <prefix>cert-file and <prefix>key-file, which come together.
func keyPair(prefix, certFile, keyFile string) (tls.Certificate, error) {
	switch {
	case certFile == "":
		return tls.Certificate{}, fmt.Errorf("invalid --%skey-file %q: needs --%scert-file", prefix, keyFile, prefix)
	case keyFile == "":
		return tls.Certificate{}, fmt.Errorf("invalid --%scert-file %q: needs --%skey-file", prefix, certFile, prefix)
	}
	certPEM, err := readPEM(prefix+"cert-file", certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readPEM(prefix+"key-file", keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("invalid --%scert-file %q with --%skey-file %q: %v", prefix, certFile, prefix, keyFile, err)
	}
	return cert, nil
}

func certPool(flag, file string) (*x509.CertPool, error) {
	data, err := readPEM(flag, file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("invalid --%s %q: no PEM certificate in it", flag, file)
	}
	return pool, nil
}

func readPEM(flag, file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return nil, fmt.Errorf("invalid --%s %q: %v", flag, file, err)
	}
	return data, nil
}

// exposed reports whether addr can be reached from other hosts: anything
// but a loopback IP (an unspecified address listens on every interface).
func exposed(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return !ok || !tcp.IP.IsLoopback()
}
