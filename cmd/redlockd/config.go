package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/redlockd/redlockd/internal/oneline"
	"github.com/redlockd/redlockd/quorum"
)

// Config is every setting of the binary, resolved from flags, environment
// and an optional YAML file, in that order of precedence over the defaults.
type Config struct {
	// Listen is the client address. Default 127.0.0.1:6380.
	Listen string
	// Backends are the Redis masters; none means embedded mode. Default none.
	Backends []string
	// NodeTimeout bounds each call to one backend. Default 50ms.
	NodeTimeout time.Duration
	// DriftFactor is the clock drift allowance, a fraction of the ttl. Default 0.01.
	DriftFactor float64
	// RequirePass is the password clients must AUTH with. Default none.
	RequirePass string
	// MaxTTL is the largest ttl a command may ask for. Default 24h.
	MaxTTL time.Duration
	// MaxWait is the largest LOCK … WAIT a command may ask for. Default 1h.
	MaxWait time.Duration
	// SessionTTL is the backend ttl of session locks. Default 30s.
	SessionTTL time.Duration
	// RestartQuarantine is how long a restarted backend sits out every
	// vote: quorum.QuarantineAuto ("auto", the default) as long as the
	// locks it may have lost can live, a fixed duration, or 0 (off).
	RestartQuarantine time.Duration
	// MetricsAddr serves Prometheus /metrics when set. Default off.
	MetricsAddr string
	// ConfigFile is the YAML file that was read, if any.
	ConfigFile string
	// LogFormat is text or json. Default text.
	LogFormat string
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// MaxClients limits open client connections; 0 is unlimited. Default 10000.
	MaxClients int
	// MaxRequestSize caps one client request, in bytes. Default 512mb.
	MaxRequestSize int
	// IdleTimeout closes client connections idle this long; 0 never. Default 0.
	IdleTimeout time.Duration
	// ClientOutputLimit caps a client's replies waiting to be written, in
	// bytes; 0 is no cap. Default 64mb.
	ClientOutputLimit int
	// PubSubOutputLimit caps a subscribed client's messages waiting to be
	// written, in bytes. Default 32mb.
	PubSubOutputLimit int
	// ClientWriteTimeout closes a client whose replies could not be
	// written for this long; 0 is no bound. Default 60s.
	ClientWriteTimeout time.Duration
	// TLSCertFile and TLSKeyFile, when both set, make the client listener
	// speak TLS. Default none.
	TLSCertFile, TLSKeyFile string
	// TLSCACertFile, when set, makes the listener require client
	// certificates signed by it. Default none.
	TLSCACertFile string
	// BackendTLSCACertFile is the CA that rediss:// (and clusters://) backends' certificates
	// must chain to. Default: the system roots.
	BackendTLSCACertFile string
	// BackendTLSCertFile and BackendTLSKeyFile are the client certificate
	// presented to rediss:// backends. Default none.
	BackendTLSCertFile, BackendTLSKeyFile string
	// BackendTLSInsecureSkipVerify accepts any certificate from rediss://
	// backends (testing only). Default false.
	BackendTLSInsecureSkipVerify bool
	// RetryDelay is the longest random pause between two tries of a
	// blocking LOCK … WAIT; each pause is drawn between a tenth of it and
	// it. Default 50ms.
	RetryDelay time.Duration

	// clientTLS and backendTLS are built from the files above by loadConfig.
	clientTLS, backendTLS *tls.Config
	// cpuProfile is the hidden --cpuprofile (see profile.go).
	cpuProfile string
	// raw is each given setting's text by flag name, for a reload to
	// tell what changed.
	raw map[string]string
}

// setting is one configurable value: its flag name (also its YAML key),
// environment variable, default and parser.
type setting struct {
	name, env, def, arg, usage string
	set                        func(c *Config, v string) error
}

var settings = []setting{
	{"listen", "REDLOCKD_LISTEN", "127.0.0.1:6380", "addr", "client address",
		func(c *Config, v string) error { c.Listen = v; return nil }},
	{"backends", "REDLOCKD_BACKENDS", "", "list", "comma-separated host:port, redis://[user:pass@]host:port[/db], rediss://…, or cluster://host:port[?seed=host:port…] / clusters://… (one Redis Cluster as one node); empty = embedded mode",
		backendsSetter},
	{"node-timeout", "REDLOCKD_NODE_TIMEOUT", "50ms", "duration", "timeout per backend, per operation",
		durationSetter(func(c *Config) *time.Duration { return &c.NodeTimeout })},
	{"drift-factor", "REDLOCKD_DRIFT_FACTOR", "0.01", "fraction", "clock drift allowance, fraction of ttl",
		func(c *Config, v string) (err error) { c.DriftFactor, err = strconv.ParseFloat(v, 64); return err }},
	{"requirepass", "REDLOCKD_PASSWORD", "", "password", "clients must AUTH with this password",
		func(c *Config, v string) error { c.RequirePass = v; return nil }},
	{"max-ttl", "REDLOCKD_MAX_TTL", "24h", "duration", "largest ttl accepted",
		durationSetter(func(c *Config) *time.Duration { return &c.MaxTTL })},
	{"max-wait", "REDLOCKD_MAX_WAIT", "1h", "duration", "largest LOCK … WAIT accepted",
		durationSetter(func(c *Config) *time.Duration { return &c.MaxWait })},
	{"session-ttl", "REDLOCKD_SESSION_TTL", "30s", "duration", "backend ttl of session locks, renewed every third of it",
		durationSetter(func(c *Config) *time.Duration { return &c.SessionTTL })},
	{"restart-quarantine", "REDLOCKD_RESTART_QUARANTINE", "auto", "auto|duration",
		"how long a restarted backend sits out every vote; auto = as long as the locks it may have lost can live, as the other backends' lock horizons tell; 0 = off",
		quarantineSetter},
	{"metrics-addr", "REDLOCKD_METRICS_ADDR", "", "addr", "HTTP address serving Prometheus /metrics; empty = off",
		func(c *Config, v string) error { c.MetricsAddr = v; return nil }},
	{"log-format", "REDLOCKD_LOG_FORMAT", "text", "text|json", "log format",
		func(c *Config, v string) error { c.LogFormat = v; return nil }},
	{"log-level", "REDLOCKD_LOG_LEVEL", "info", "level", "debug, info, warn or error",
		func(c *Config, v string) error { c.LogLevel = v; return nil }},
	{"max-clients", "REDLOCKD_MAX_CLIENTS", "10000", "n", "largest number of client connections; 0 = unlimited",
		func(c *Config, v string) (err error) { c.MaxClients, err = strconv.Atoi(v); return err }},
	{"max-request-size", "REDLOCKD_MAX_REQUEST_SIZE", "512mb", "size", "largest client request (a command with its arguments); a bigger one closes the connection",
		sizeSetter(func(c *Config) *int { return &c.MaxRequestSize })},
	{"idle-timeout", "REDLOCKD_IDLE_TIMEOUT", "0s", "duration", "close client connections idle this long; 0 = never",
		durationSetter(func(c *Config) *time.Duration { return &c.IdleTimeout })},
	{"client-output-limit", "REDLOCKD_CLIENT_OUTPUT_LIMIT", "64mb", "size", "close a client whose pending replies exceed this; 0 = no limit",
		sizeSetter(func(c *Config) *int { return &c.ClientOutputLimit })},
	{"client-output-limit-pubsub", "REDLOCKD_CLIENT_OUTPUT_LIMIT_PUBSUB", "32mb", "size", "close a subscribed client whose undelivered messages exceed this",
		sizeSetter(func(c *Config) *int { return &c.PubSubOutputLimit })},
	{"client-write-timeout", "REDLOCKD_CLIENT_WRITE_TIMEOUT", "60s", "duration", "close a client that does not read its replies for this long; 0 = no bound",
		durationSetter(func(c *Config) *time.Duration { return &c.ClientWriteTimeout })},
	{"tls-cert-file", "REDLOCKD_TLS_CERT_FILE", "", "file", "PEM certificate: with --tls-key-file, --listen speaks TLS",
		func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{"tls-key-file", "REDLOCKD_TLS_KEY_FILE", "", "file", "PEM private key of --tls-cert-file",
		func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{"tls-ca-cert-file", "REDLOCKD_TLS_CA_CERT_FILE", "", "file", "PEM CA: clients must present a certificate signed by it",
		func(c *Config, v string) error { c.TLSCACertFile = v; return nil }},
	{"backend-tls-ca-cert-file", "REDLOCKD_BACKEND_TLS_CA_CERT_FILE", "", "file", "PEM CA that rediss:// backends' certificates chain to; empty = system roots",
		func(c *Config, v string) error { c.BackendTLSCACertFile = v; return nil }},
	{"backend-tls-cert-file", "REDLOCKD_BACKEND_TLS_CERT_FILE", "", "file", "PEM client certificate for rediss:// backends",
		func(c *Config, v string) error { c.BackendTLSCertFile = v; return nil }},
	{"backend-tls-key-file", "REDLOCKD_BACKEND_TLS_KEY_FILE", "", "file", "PEM private key of --backend-tls-cert-file",
		func(c *Config, v string) error { c.BackendTLSKeyFile = v; return nil }},
	{"backend-tls-insecure-skip-verify", "REDLOCKD_BACKEND_TLS_INSECURE_SKIP_VERIFY", "false", "bool", "accept any certificate from rediss:// backends (testing only)",
		boolSetter(func(c *Config) *bool { return &c.BackendTLSInsecureSkipVerify })},
	{"retry-delay", "REDLOCKD_RETRY_DELAY", "50ms", "duration", "longest random pause between two tries of a LOCK … WAIT (drawn from a tenth of it to it); a release wakes waiters before it",
		durationSetter(func(c *Config) *time.Duration { return &c.RetryDelay })},
}

// defaultDocs describes defaults that are not a fixed value.
var defaultDocs = map[string]string{}

// quarantineSetter reads --restart-quarantine: auto, or a duration.
func quarantineSetter(c *Config, v string) error {
	if v == "auto" {
		c.RestartQuarantine = quorum.QuarantineAuto
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("not auto or a duration (e.g. 0, 30s, 2h)")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	c.RestartQuarantine = d
	return nil
}

// configEnv names the config file when --config is not given.
const configEnv = "REDLOCKD_CONFIG"

func durationSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("not a duration (e.g. 50ms, 2s, 1m)")
		}
		*field(c) = d
		return nil
	}
}

func boolSetter(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("not a boolean (true or false)")
		}
		*field(c) = b
		return nil
	}
}

// errHelp and errVersion ask run to print and exit 0.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// loadConfig resolves the configuration from args, env (which returns ""
// for an unset variable) and the YAML file they name. Its errors are one
// line naming the bad setting.
func loadConfig(args []string, env func(string) string) (Config, error) {
	flags, err := parseFlags(args)
	if err != nil {
		return Config{}, err
	}
	path := firstNonEmpty(flags["config"].val, env(configEnv))
	file, err := readFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	c.ConfigFile = path
	c.cpuProfile = flags[cpuProfileFlag].val
	c.raw = map[string]string{}
	for _, s := range settings {
		if err := resolve(&c, s, flags, env, file, path); err != nil {
			return Config{}, err
		}
		if v, ok := lookupAny(s, flags, env, file); ok {
			c.raw[s.name] = v.val
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, c.loadTLS()
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// resolve applies the highest-precedence source of s, and names that
// source if its value does not parse.
func resolve(c *Config, s setting, flags map[string]flagValue, env func(string) string, file map[string]string, path string) error {
	if s.def != "" {
		if err := s.set(c, s.def); err != nil {
			panic(fmt.Sprintf("default of --%s: %v", s.name, err))
		}
	}
	v, ok := lookupAny(s, flags, env, file)
	if !ok {
		return nil
	}
	if err := s.set(c, v.val); err != nil {
		where := ""
		if v.source == s.name {
			where = " in " + path
		}
		return fmt.Errorf("invalid %s %q%s: %v", v.source, v.val, where, unwrapParse(err))
	}
	return nil
}

// flagValue is a raw setting and where it came from: "--name" (flag),
// the environment variable, or the bare key (config file).
type flagValue struct {
	val, source string
}

func lookupAny(s setting, flags map[string]flagValue, env func(string) string, file map[string]string) (flagValue, bool) {
	if v, ok := flags[s.name]; ok {
		return v, true
	}
	if v := env(s.env); v != "" {
		return flagValue{v, s.env}, true
	}
	if v, ok := file[s.name]; ok {
		return flagValue{v, s.name}, true
	}
	return flagValue{}, false
}

// unwrapParse drops strconv's repetition of the input ("strconv.ParseFloat:
// parsing \"x\": invalid syntax" becomes "invalid syntax").
func unwrapParse(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// parseFlags records which flags were given, as raw strings: parsing them
// waits until the sources are merged, so that an error names its source.
func parseFlags(args []string) (map[string]flagValue, error) {
	fs := flag.NewFlagSet("redlockd", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by run
	got := map[string]flagValue{}
	for _, s := range append(settings, setting{name: "config"}, setting{name: cpuProfileFlag}) {
		name := s.name
		record := func(v string) error {
			got[name] = flagValue{v, "--" + name}
			return nil
		}
		if s.arg == "bool" {
			fs.BoolFunc(name, s.usage, record) // "--name" alone means true
		} else {
			fs.Func(name, s.usage, record)
		}
	}
	version := fs.Bool("version", false, "print the version and exit")
	fs.BoolVar(version, "v", false, "print the version and exit (as redis-server -v)")
	if err := fs.Parse(joinBoolValues(args)); err != nil {
		return nil, flagError(err, args)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *version {
		return nil, errVersion
	}
	return got, nil
}

// joinBoolValues turns "--flag word" into "--flag=word" for the boolean
// settings when word is not a flag itself: "--backend-tls-insecure-skip-verify
// maybe" is then a bad value of that flag rather than a stray argument.
func joinBoolValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if isBoolSetting(name) && a != name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func isBoolSetting(name string) bool {
	for _, s := range settings {
		if s.name == name && s.arg == "bool" {
			return true
		}
	}
	return false
}

// errNoValue reports a value flag given last, with nothing after it.
var errNoValue = errors.New("needs a value")

// flagError rewrites the flag package's errors in the documented form:
// the flag as the user spelled it, and the value.
func flagError(err error, args []string) error {
	msg := err.Error()
	switch {
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	case strings.HasPrefix(msg, "flag provided but not defined: -"):
		name := strings.TrimPrefix(msg, "flag provided but not defined: -")
		return fmt.Errorf("unknown flag %s (see --help)", spelled(name, args))
	case strings.HasPrefix(msg, "flag needs an argument: -"):
		name := strings.TrimPrefix(msg, "flag needs an argument: -")
		return fmt.Errorf("invalid --%s: %v", name, errNoValue)
	case strings.HasPrefix(msg, "invalid boolean value "):
		// BoolFunc flags parse their own value later; this is --version=x.
		return fmt.Errorf("invalid --version: %s", strings.TrimPrefix(msg, "invalid boolean value "))
	}
	return errors.New(oneline.Of(msg))
}

// spelled is the argument that named flag name, as typed ("-x", "--x=1").
func spelled(name string, args []string) string {
	for _, a := range args {
		flagPart, _, _ := strings.Cut(a, "=")
		if strings.TrimLeft(flagPart, "-") == name && strings.HasPrefix(flagPart, "-") {
			return flagPart
		}
	}
	return "--" + name
}

// readFile reads the YAML config file into raw strings by key. Lists (for
// backends) are joined with commas. Unknown keys are errors, so that a
// typo does not silently fall back to a default.
func readFile(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("invalid --config %q: %v", path, err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("invalid --config %q: %v", path, oneline.Of(err.Error()))
	}
	out := make(map[string]string, len(doc))
	for key, node := range doc {
		v, err := yamlValue(key, &node)
		if err != nil {
			return nil, fmt.Errorf("invalid --config %q: %v", path, err)
		}
		out[key] = v
	}
	return out, nil
}

func yamlValue(key string, n *yaml.Node) (string, error) {
	if !known(key) {
		return "", fmt.Errorf("unknown setting %q", key)
	}
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	case n.Kind == yaml.SequenceNode && key == "backends":
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("%s: list items must be strings", key)
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("%s: want a single value", key)
}

func known(key string) bool {
	for _, s := range settings {
		if s.name == key {
			return true
		}
	}
	return false
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	checks := []struct {
		bad     bool
		name    string
		val     any
		problem string
	}{
		{c.Listen == "", "listen", c.Listen, "must not be empty"},
		{c.NodeTimeout <= 0, "node-timeout", c.NodeTimeout, "must be positive"},
		{c.MaxTTL <= 0, "max-ttl", c.MaxTTL, "must be positive"},
		{c.MaxWait < time.Millisecond, "max-wait", c.MaxWait, "must be at least 1ms (WAIT counts milliseconds)"},
		{c.NodeTimeout >= c.MaxTTL, "node-timeout", c.NodeTimeout, fmt.Sprintf("must be less than --max-ttl (%v)", c.MaxTTL)},
		{c.DriftFactor < 0 || c.DriftFactor >= 1, "drift-factor", c.DriftFactor, "must be in [0, 1)"},
		{c.SessionTTL <= c.NodeTimeout, "session-ttl", c.SessionTTL, fmt.Sprintf("must be more than --node-timeout (%v)", c.NodeTimeout)},
		{c.RestartQuarantine < 0 && c.RestartQuarantine != quorum.QuarantineAuto, "restart-quarantine", c.RestartQuarantine, "must not be negative"},
		{c.MaxClients < 0, "max-clients", c.MaxClients, "must not be negative"},
		{c.MaxRequestSize < 1024, "max-request-size", c.MaxRequestSize, "must be at least 1kb"},
		{c.IdleTimeout < 0, "idle-timeout", c.IdleTimeout, "must not be negative"},
		{c.ClientOutputLimit < 0, "client-output-limit", c.ClientOutputLimit, "must not be negative"},
		{c.PubSubOutputLimit < 1024, "client-output-limit-pubsub", c.PubSubOutputLimit, "must be at least 1kb"},
		{c.ClientWriteTimeout < 0, "client-write-timeout", c.ClientWriteTimeout, "must not be negative"},
		{c.LogFormat != "text" && c.LogFormat != "json", "log-format", c.LogFormat, "must be text or json"},
		{!validLevel(c.LogLevel), "log-level", c.LogLevel, "must be debug, info, warn or error"},
		{c.RetryDelay < time.Millisecond, "retry-delay", c.RetryDelay, "must be at least 1ms"},
	}
	for _, ch := range checks {
		if ch.bad {
			return fmt.Errorf("invalid --%s %q: %s", ch.name, fmt.Sprint(ch.val), ch.problem)
		}
	}
	return nil
}

func validLevel(l string) bool {
	switch l {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// printUsage lists every flag with its environment variable and default.
func printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: redlockd [flags]\n\nA Redis-protocol lock server running Redlock over independent Redis masters.\nPrecedence: flags > environment > config file > defaults.\n\nFlags:\n")
	for _, s := range settings {
		fmt.Fprintf(w, "  --%s %s\n      %s (env %s", s.name, s.arg, s.usage, s.env)
		if def := firstNonEmpty(s.def, defaultDocs[s.name]); def != "" {
			fmt.Fprintf(w, ", default %s", def)
		}
		fmt.Fprintln(w, ")")
	}
	fmt.Fprintf(w, "  --config file\n      YAML file whose keys are the flag names (env %s)\n", configEnv)
	fmt.Fprintf(w, "  --version, -v\n      print the version and exit\n  --help\n      print this help and exit\n\nSIGHUP reloads log-level, requirepass and the TLS certificates.\n")
}
