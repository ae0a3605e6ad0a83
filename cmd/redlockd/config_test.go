package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// envOf turns a map into the env lookup that run and loadConfig take.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeYAML(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redlockd.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigDefaults(t *testing.T) {
	got, err := loadConfig(nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	got.raw = nil
	want := Config{
		Listen: "127.0.0.1:6380", NodeTimeout: 50 * time.Millisecond, DriftFactor: 0.01,
		MaxTTL: 24 * time.Hour, MaxWait: time.Hour, SessionTTL: 30 * time.Second, RestartQuarantine: quorum.QuarantineAuto,
		LogFormat: "text", LogLevel: "info", MaxClients: 10000,
		MaxRequestSize: 512 << 20, ClientOutputLimit: 64 << 20, PubSubOutputLimit: 32 << 20, ClientWriteTimeout: time.Minute,
		RetryDelay: 50 * time.Millisecond,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestConfigPrecedence(t *testing.T) {
	file := writeYAML(t, "listen: file:1\nnode-timeout: 10ms\nmax-clients: 7\n")
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantListen string
	}{
		{"file over default", []string{"--config", file}, nil, "file:1"},
		{"env over file", []string{"--config", file}, map[string]string{"REDLOCKD_LISTEN": "env:1"}, "env:1"},
		{"flag over env", []string{"--config", file, "--listen", "flag:1"}, map[string]string{"REDLOCKD_LISTEN": "env:1"}, "flag:1"},
		{"file named by env", nil, map[string]string{"REDLOCKD_CONFIG": file}, "file:1"},
		{"flag over file, no env", []string{"--listen=flag:1", "--config", file}, nil, "flag:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.Listen != tt.wantListen || c.NodeTimeout != 10*time.Millisecond || c.MaxClients != 7 {
				t.Fatalf("listen %q node-timeout %v max-clients %d; want %q, 10ms, 7 (from the file)",
					c.Listen, c.NodeTimeout, c.MaxClients, tt.wantListen)
			}
		})
	}
}

func TestConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		yaml  string
		check func(c Config) bool
	}{
		{"backends flag", []string{"--backends", " a:1, b:2 ,c:3"}, nil, "",
			func(c Config) bool { return reflect.DeepEqual(c.Backends, []string{"a:1", "b:2", "c:3"}) }},
		{"backends yaml list", nil, nil, "backends:\n  - a:1\n  - redis://u:p@b:2/1\n",
			func(c Config) bool { return reflect.DeepEqual(c.Backends, []string{"a:1", "redis://u:p@b:2/1"}) }},
		{"backends yaml string", nil, nil, "backends: a:1,b:2\n",
			func(c Config) bool { return reflect.DeepEqual(c.Backends, []string{"a:1", "b:2"}) }},
		{"backends env", nil, map[string]string{"REDLOCKD_BACKENDS": "x:1,y:2"}, "",
			func(c Config) bool { return reflect.DeepEqual(c.Backends, []string{"x:1", "y:2"}) }},
		{"quarantine stays auto with max-ttl", []string{"--max-ttl", "10s"}, nil, "",
			func(c Config) bool { return c.RestartQuarantine == quorum.QuarantineAuto }},
		{"quarantine auto flag", []string{"--restart-quarantine", "auto"}, nil, "",
			func(c Config) bool { return c.RestartQuarantine == quorum.QuarantineAuto }},
		{"quarantine fixed env", nil, map[string]string{"REDLOCKD_RESTART_QUARANTINE": "90s"}, "",
			func(c Config) bool { return c.RestartQuarantine == 90*time.Second }},
		{"quarantine auto in file over nothing", nil, nil, "restart-quarantine: auto\n",
			func(c Config) bool { return c.RestartQuarantine == quorum.QuarantineAuto }},
		{"quarantine flag over auto in file", []string{"--restart-quarantine", "2h"}, nil, "restart-quarantine: auto\n",
			func(c Config) bool { return c.RestartQuarantine == 2*time.Hour }},
		{"quarantine off", []string{"--max-ttl", "10s", "--restart-quarantine", "0"}, nil, "",
			func(c Config) bool { return c.RestartQuarantine == 0 }},
		{"quarantine off in file", nil, nil, "restart-quarantine: 0s\n",
			func(c Config) bool { return c.RestartQuarantine == 0 }},
		{"password env", nil, map[string]string{"REDLOCKD_PASSWORD": "s3cret"}, "",
			func(c Config) bool { return c.RequirePass == "s3cret" }},
		{"yaml scalars", nil, nil, "drift-factor: 0.05\nlog-format: json\nlog-level: debug\nsession-ttl: 9s\nmetrics-addr: :9121\n",
			func(c Config) bool {
				return c.DriftFactor == 0.05 && c.LogFormat == "json" && c.LogLevel == "debug" &&
					c.SessionTTL == 9*time.Second && c.MetricsAddr == ":9121"
			}},
		{"zero drift", []string{"--drift-factor", "0"}, nil, "", func(c Config) bool { return c.DriftFactor == 0 }},
		{"retry delay default", nil, nil, "", func(c Config) bool { return c.RetryDelay == 50*time.Millisecond }},
		{"retry delay env", nil, map[string]string{"REDLOCKD_RETRY_DELAY": "2s"}, "",
			func(c Config) bool { return c.RetryDelay == 2*time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.yaml != "" {
				args = append([]string{"--config", writeYAML(t, tt.yaml)}, args...)
			}
			c, err := loadConfig(args, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		yaml string
		want string // the whole error line; FILE stands for the config path
	}{
		{"bad duration flag", []string{"--node-timeout", "abc"}, nil, "",
			`invalid --node-timeout "abc": not a duration (e.g. 50ms, 2s, 1m)`},
		{"unknown flag", []string{"--nope"}, nil, "", `unknown flag --nope (see --help)`},
		{"stray argument", []string{"extra"}, nil, "", `unexpected argument "extra"`},
		{"bad env", nil, map[string]string{"REDLOCKD_DRIFT_FACTOR": "x"}, "",
			`invalid REDLOCKD_DRIFT_FACTOR "x": invalid syntax`},
		{"unknown yaml key", nil, nil, "listen: a:1\nlisten-addr: b\n",
			`invalid --config "FILE": unknown setting "listen-addr"`},
		{"bad yaml value", nil, nil, "max-ttl: forever\n",
			`invalid max-ttl "forever" in FILE: not a duration (e.g. 50ms, 2s, 1m)`},
		{"yaml map value", nil, nil, "listen:\n  host: a\n", `invalid --config "FILE": listen: want a single value`},
		{"yaml syntax", nil, nil, "listen: [\n", ""},
		{"missing file", []string{"--config", "/nonexistent/x.yaml"}, nil, "", ""},
		{"max-wait not positive", []string{"--max-wait", "0s"}, nil, "",
			`invalid --max-wait "0s": must be at least 1ms (WAIT counts milliseconds)`},
		{"max-wait below a millisecond", []string{"--max-wait", "1ns"}, nil, "",
			`invalid --max-wait "1ns": must be at least 1ms (WAIT counts milliseconds)`},
		{"timeout not below max-ttl", []string{"--max-ttl", "1m", "--node-timeout", "2m"}, nil, "",
			`invalid --node-timeout "2m0s": must be less than --max-ttl (1m0s)`},
		{"zero timeout", []string{"--node-timeout", "0s"}, nil, "", `invalid --node-timeout "0s": must be positive`},
		{"drift one", []string{"--drift-factor", "1"}, nil, "", `invalid --drift-factor "1": must be in [0, 1)`},
		{"negative drift", []string{"--drift-factor=-0.1"}, nil, "", `invalid --drift-factor "-0.1": must be in [0, 1)`},
		{"log format", []string{"--log-format", "xml"}, nil, "", `invalid --log-format "xml": must be text or json`},
		{"log level", []string{"--log-level", "loud"}, nil, "", `invalid --log-level "loud": must be debug, info, warn or error`},
		{"negative clients", []string{"--max-clients", "-1"}, nil, "", `invalid --max-clients "-1": must not be negative`},
		{"negative quarantine", []string{"--restart-quarantine", "-1s"}, nil, "", `invalid --restart-quarantine "-1s": must not be negative`},
		{"bad quarantine", []string{"--restart-quarantine", "sometimes"}, nil, "",
			`invalid --restart-quarantine "sometimes": not auto or a duration (e.g. 0, 30s, 2h)`},
		{"bad quarantine env", nil, map[string]string{"REDLOCKD_RESTART_QUARANTINE": "Auto"}, "",
			`invalid REDLOCKD_RESTART_QUARANTINE "Auto": not auto or a duration (e.g. 0, 30s, 2h)`},
		{"empty listen", []string{"--listen", ""}, nil, "", `invalid --listen "": must not be empty`},
		{"bad size", []string{"--max-request-size", "lots"}, nil, "", `invalid --max-request-size "lots": not a size (e.g. 1048576, 512kb, 64mb, 1gb)`},
		{"tiny request size", []string{"--max-request-size", "100"}, nil, "", `invalid --max-request-size "100": must be at least 1kb`},
		{"negative idle", []string{"--idle-timeout", "-1s"}, nil, "", `invalid --idle-timeout "-1s": must not be negative`},
		{"negative output limit", []string{"--client-output-limit", "-1"}, nil, "", `invalid --client-output-limit "-1": not a size (e.g. 1048576, 512kb, 64mb, 1gb)`},
		{"tiny pub/sub limit", []string{"--client-output-limit-pubsub", "100"}, nil, "", `invalid --client-output-limit-pubsub "100": must be at least 1kb`},
		{"bad bool", []string{"--backend-tls-insecure-skip-verify=maybe"}, nil, "",
			`invalid --backend-tls-insecure-skip-verify "maybe": not a boolean (true or false)`},
		{"bad bool as next argument", []string{"--backend-tls-insecure-skip-verify", "maybe"}, nil, "",
			`invalid --backend-tls-insecure-skip-verify "maybe": not a boolean (true or false)`},
		{"bad bool env", nil, map[string]string{"REDLOCKD_BACKEND_TLS_INSECURE_SKIP_VERIFY": "yes"}, "",
			`invalid REDLOCKD_BACKEND_TLS_INSECURE_SKIP_VERIFY "yes": not a boolean (true or false)`},
		{"empty backend entry", []string{"--backends", "127.0.0.1:7001,,127.0.0.1:7002"}, nil, "",
			`invalid --backends "127.0.0.1:7001,,127.0.0.1:7002": entry 2 of 3 is empty`},
		{"trailing comma", []string{"--backends", "a:1,b:2,c:3,"}, nil, "",
			`invalid --backends "a:1,b:2,c:3,": entry 4 of 4 is empty`},
		{"empty entry in env", nil, map[string]string{"REDLOCKD_BACKENDS": "a:1, ,b:2"}, "",
			`invalid REDLOCKD_BACKENDS "a:1, ,b:2": entry 2 of 3 is empty`},
		{"empty yaml list item", nil, nil, "backends:\n  - a:1\n  - \"\"\n  - b:2\n",
			`invalid backends "a:1,,b:2" in FILE: entry 2 of 3 is empty`},
		{"same address twice", []string{"--backends", "127.0.0.1:7006,127.0.0.1:7006,127.0.0.1:7002"}, nil, "",
			`invalid --backends "127.0.0.1:7006,127.0.0.1:7006,127.0.0.1:7002": entries 1 and 2 are the same server (127.0.0.1:7006)`},
		{"same server by URL and db", []string{"--backends", "a:1,redis://u:p@A:1/3,b:2"}, nil, "",
			`invalid --backends "a:1,redis://u:p@A:1/3,b:2": entries 1 and 2 are the same server (a:1)`},
		{"cluster seed twice", []string{"--backends", "cluster://a:1,cluster://b:1?seed=a:1,c:1"}, nil, "",
			`invalid --backends "cluster://a:1,cluster://b:1?seed=a:1,c:1": entries 1 and 2 are the same server (a:1)`},
		{"short version flag is not a typo", []string{"-x"}, nil, "", `unknown flag -x (see --help)`},
		{"unknown flag with value", []string{"--lissten=a:1"}, nil, "", `unknown flag --lissten (see --help)`},
		{"value flag without value", []string{"--listen"}, nil, "", `invalid --listen: needs a value`},
		{"zero retry delay", []string{"--retry-delay", "0"}, nil, "", `invalid --retry-delay "0s": must be at least 1ms`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, path := tt.args, ""
			if tt.yaml != "" {
				path = writeYAML(t, tt.yaml)
				args = append([]string{"--config", path}, args...)
			}
			_, err := loadConfig(args, envOf(tt.env))
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			if want := strings.ReplaceAll(tt.want, "FILE", path); want != "" && err.Error() != want {
				t.Fatalf("got  %q\nwant %q", err, want)
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	unknownKey := writeYAML(t, "lissten: a:1\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"--node-timeout", "abc"}, "redlockd: invalid --node-timeout \"abc\""},
		{"unknown yaml key", []string{"--config", unknownKey}, "unknown setting \"lissten\""},
		{"bad backend address", []string{"--backends", "redis://[::1"}, "redlockd: invalid --backends"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, envOf(nil), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Fatalf("stderr %q: want one line containing %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestRunHelpAndVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, envOf(nil), &out, &out); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, s := range settings {
		if !strings.Contains(out.String(), "--"+s.name) || !strings.Contains(out.String(), s.env) {
			t.Errorf("--help lacks --%s or %s", s.name, s.env)
		}
	}
	for _, want := range []string{"default 50ms", "default 127.0.0.1:6380", "default auto", "--config", "--version"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	out.Reset()
	for _, arg := range []string{"--version", "-v"} {
		out.Reset()
		if code := run(context.Background(), []string{arg}, envOf(nil), &out, &out); code != 0 || out.String() != "redlockd "+version()+"\n" {
			t.Fatalf("%s: exit %d, %q", arg, code, out.String())
		}
	}
}
