package compat

import (
	"context"
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
	if _, err := os.Stat(filepath.Join("node", "node_modules", ".package-lock.json")); err == nil {
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

// nodeCase is one group of a compat/node script and the checks it must
// report.
type nodeCase struct {
	group string
	want  []string
}

func runNode(t *testing.T, script string, cases []nodeCase) {
	t.Helper()
	node := nodeReady(t)
	in := startRedlockd(t)
	for _, tc := range cases {
		t.Run(tc.group, func(t *testing.T) {
			out := runTool(t, testCtx(t), "node", in.addr, node, script, tc.group)
			wantLines(t, out, append(tc.want, "PASS")...)
		})
	}
}

// TestNodeRedis runs node-redis ("redis" v6) with its default RESP3 and
// with RESP2, plus the native SET IFEQ / DELEX IFEQ forms it sends.
func TestNodeRedis(t *testing.T) {
	runNode(t, "redis.mjs", []nodeCase{
		{"resp3", []string{"ok nr3-hello", "ok nr3-set-nx-px", "ok nr3-evalsha", "ok nr3-lock", "ok nr3-pipeline"}},
		{"resp2", []string{"ok nr2-hello", "ok nr2-set-nx-px", "ok nr2-evalsha", "ok nr2-lock", "ok nr2-pipeline"}},
		{"native-cas", []string{"ok native-cas"}},
	})
}

// TestIORedis runs ioredis with its default protocol (RESP3 in v6) and
// RESP2: SET NX PX, EVAL, EVALSHA via defineCommand, LOCK, pipelines.
func TestIORedis(t *testing.T) {
	runNode(t, "ioredis.mjs", []nodeCase{
		{"default", []string{"ok iodefault-set-nx-px-eval", "ok iodefault-evalsha", "ok iodefault-lock", "ok iodefault-pipeline"}},
		{"resp2", []string{"ok io2-set-nx-px-eval", "ok io2-evalsha", "ok io2-lock", "ok io2-pipeline"}},
	})
}

// TestNodeRedlock runs node-redlock v5 over one ioredis client pointed at
// redlockd: acquire, extend, release, multi-resource locks and using().
func TestNodeRedlock(t *testing.T) {
	runNode(t, "redlock.mjs", []nodeCase{
		{"single", []string{"ok acquire", "ok second-acquire-refused", "ok extend", "ok release", "ok extend-after-release-refused"}},
		{"multi", []string{"ok multi-acquire", "ok multi-extend", "ok multi-release"}},
		{"using", []string{"ok using"}},
	})
}
