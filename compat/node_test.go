package compat

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	npmOnce sync.Once
	npmErr  string // the failed npm ci's output, or ""
)

// nodeReady finds node and, on a fresh checkout, installs the pinned
// packages of compat/node with npm ci (package-lock.json decides the
// versions), once per test binary.
func nodeReady(t *testing.T) string {
	t.Helper()
	node := lookTool(t, "node", "apt-get install nodejs npm")
	if nodeModulesComplete() {
		return node
	}
	npm := lookTool(t, "npm", "apt-get install npm")
	npmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := runCmd(ctx, "node", nil, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		if err != nil {
			npmErr = err.Error() + "\n" + out
		}
	})
	if npmErr != "" {
		t.Fatalf("npm ci in compat/node: %s", npmErr)
	}
	return node
}

// nodeModulesComplete reports whether node_modules holds every
// dependency package.json names: a checkout that gained a dependency
// since its last npm ci installs again.
func nodeModulesComplete() bool {
	b, err := os.ReadFile(filepath.Join("node", "package.json"))
	if err != nil {
		return false
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return false
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join("node", "node_modules", name, "package.json")); err != nil {
			return false
		}
	}
	_, err = os.Stat(filepath.Join("node", "node_modules", ".package-lock.json"))
	return err == nil
}

// nodeCase is one group of a compat/node script, the checks it must
// report, and the ioredis package it runs with ("": ioredis v6).
type nodeCase struct {
	group   string
	want    []string
	ioredis string
}

func runNode(t *testing.T, script string, cases []nodeCase) {
	t.Helper()
	node := nodeReady(t)
	in := startRedlockd(t)
	for _, tc := range cases {
		name := tc.group
		env := []string{"REDLOCKD_ADDR=" + in.Addr}
		if tc.ioredis != "" {
			name += "/" + tc.ioredis
			env = append(env, "IOREDIS="+tc.ioredis)
		}
		t.Run(name, func(t *testing.T) {
			out, err := runCmd(testCtx(t), "node", env, node, script, tc.group)
			if err != nil {
				t.Fatalf("node %s %s: %v\n%s", script, tc.group, err, out)
			}
			wantLines(t, out, append(tc.want, "PASS")...)
		})
	}
}

// TestNodeRedis runs node-redis ("redis" v6) with its default RESP3 and
// with RESP2, plus the native SET IFEQ / DELEX IFEQ forms it sends.
func TestNodeRedis(t *testing.T) {
	runNode(t, "redis.mjs", []nodeCase{
		{group: "resp3", want: []string{"ok nr3-hello", "ok nr3-set-nx-px", "ok nr3-evalsha", "ok nr3-lock", "ok nr3-pipeline", "ok nr3-multi"}},
		{group: "resp2", want: []string{"ok nr2-hello", "ok nr2-set-nx-px", "ok nr2-evalsha", "ok nr2-lock", "ok nr2-pipeline", "ok nr2-multi"}},
		{group: "native-cas", want: []string{"ok native-cas"}},
	})
}

// TestIORedis runs ioredis v6 with its default protocol (RESP3) and
// RESP2, and ioredis v5 (RESP2 only): SET NX PX, EVAL, EVALSHA via
// defineCommand, LOCK, pipelines.
func TestIORedis(t *testing.T) {
	want := func(p string) []string {
		return []string{"ok " + p + "-set-nx-px-eval", "ok " + p + "-evalsha", "ok " + p + "-lock", "ok " + p + "-pipeline"}
	}
	runNode(t, "ioredis.mjs", []nodeCase{
		{group: "default", want: want("iodefault")},
		{group: "resp2", want: want("io2")},
		{group: "default", want: want("iodefault"), ioredis: "ioredis5"},
	})
}

// TestNodeRedlock runs node-redlock v5 over one ioredis client (v6, and
// v5) pointed at redlockd: acquire, extend, release, multi-resource locks
// and using().
func TestNodeRedlock(t *testing.T) {
	var cases []nodeCase
	for _, io := range []string{"", "ioredis5"} {
		cases = append(cases,
			nodeCase{"single", []string{"ok acquire", "ok second-acquire-refused", "ok extend", "ok release", "ok extend-after-release-refused"}, io},
			nodeCase{"multi", []string{"ok multi-acquire", "ok multi-extend", "ok multi-release"}, io},
			nodeCase{"using", []string{"ok using"}, io})
	}
	runNode(t, "redlock.mjs", cases)
}
