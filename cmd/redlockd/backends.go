package main

import (
	"fmt"
	"net/url"
	"strings"
)

// backendsSetter reads --backends: a comma-separated list in which every
// entry is a backend. An empty entry ("a:1,,b:2", a trailing comma) is a
// mistake, not something to skip: it usually means a backend went missing
// from a template.
func backendsSetter(c *Config, v string) error {
	if strings.TrimSpace(v) == "" {
		c.Backends = nil
		return nil
	}
	parts := strings.Split(v, ",")
	out := make([]string, 0, len(parts))
	for i, s := range parts {
		if s = strings.TrimSpace(s); s == "" {
			return fmt.Errorf("entry %d of %d is empty", i+1, len(parts))
		}
		out = append(out, s)
	}
	if err := distinctServers(out); err != nil {
		return err
	}
	c.Backends = out
	return nil
}

// distinctServers refuses a list that names one server twice: a majority
// over two copies of one server is no majority. Names that differ but
// reach one server are found later, by the servers' run_id.
func distinctServers(backends []string) error {
	seen := map[string]int{}
	for i, b := range backends {
		for _, hp := range serverAddrs(b) {
			if j, dup := seen[hp]; dup {
				return fmt.Errorf("entries %d and %d are the same server (%s)", j+1, i+1, hp)
			}
			seen[hp] = i
		}
	}
	return nil
}

// serverAddrs are the host:port pairs a backend entry reaches: its
// address, and for a Redis Cluster its seeds too. An entry that does not
// parse yields what it can; opening it reports the error.
func serverAddrs(entry string) []string {
	if !strings.Contains(entry, "://") {
		return []string{strings.ToLower(entry)}
	}
	u, err := url.Parse(entry)
	if err != nil || u.Host == "" {
		return nil
	}
	out := []string{strings.ToLower(u.Host)}
	for _, seed := range u.Query()["seed"] {
		out = append(out, strings.ToLower(seed))
	}
	return out
}

// usesBackendTLS reports whether any backend is reached over TLS.
func usesBackendTLS(backends []string) bool {
	for _, b := range backends {
		if strings.HasPrefix(b, "rediss://") || strings.HasPrefix(b, "clusters://") {
			return true
		}
	}
	return false
}

// warnings are settings that work but are most likely not what the
// operator meant; run logs each once the logger exists.
func (c Config) warnings() []string {
	var w []string
	switch len(c.Backends) {
	case 1:
		w = append(w, "one backend: no fault tolerance, every lock is lost when it fails; use 3 or more independent Redis masters")
	case 2:
		w = append(w, "two backends: the quorum is 2, so the failure of either one stops all locking; use 3 or more independent Redis masters")
	}
	if !usesBackendTLS(c.Backends) {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"backend-tls-ca-cert-file", c.BackendTLSCACertFile != ""},
			{"backend-tls-cert-file", c.BackendTLSCertFile != ""},
			{"backend-tls-key-file", c.BackendTLSKeyFile != ""},
			{"backend-tls-insecure-skip-verify", c.BackendTLSInsecureSkipVerify},
		} {
			if f.set {
				w = append(w, fmt.Sprintf("--%s has no effect: no backend is rediss:// or clusters://", f.name))
			}
		}
	}
	return w
}

// envWarnings names the REDLOCKD_ variables of environ that no setting
// reads (a misspelling would otherwise fall back to a default silently),
// with the closest real name.
func envWarnings(environ []string) []string {
	known := map[string]bool{configEnv: true}
	for _, s := range settings {
		known[s.env] = true
	}
	var w []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "REDLOCKD_") || known[name] {
			continue
		}
		msg := fmt.Sprintf("environment variable %s is not a setting and is ignored", name)
		if near := closestEnv(name); near != "" {
			msg += "; did you mean " + near + "?"
		}
		w = append(w, msg)
	}
	return w
}

// closestEnv is the setting variable nearest to name by edit distance,
// if one is near enough to be a misspelling.
func closestEnv(name string) string {
	best, bestD := "", 4
	for _, env := range append([]string{configEnv}, envNames()...) {
		if d := editDistance(name, env); d < bestD {
			best, bestD = env, d
		}
	}
	return best
}

func envNames() []string {
	out := make([]string, len(settings))
	for i, s := range settings {
		out[i] = s.env
	}
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
