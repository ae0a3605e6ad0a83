package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/childproc"
)

// lookTool returns the path of an external program the suite needs. A
// missing one fails the test, naming the package to install: CI installs
// them all, so a missing tool is a broken environment, not a pass.
func lookTool(t *testing.T, path, install string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err != nil {
		t.Fatalf("%s not found (%s): %v", path, install, err)
	}
	return p
}

// runTool runs name with args in dir under ctx, with REDLOCKD_ADDR=addr
// added to the environment, and returns its combined output. A non-zero
// exit fails the test with the output.
func runTool(t *testing.T, ctx context.Context, dir, addr, name string, args ...string) string {
	t.Helper()
	out, err := runCmd(ctx, dir, []string{"REDLOCKD_ADDR=" + addr}, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// runCmd runs name in dir with env added to the environment, and returns
// its combined output.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := childproc.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := childproc.Run(cmd)
	return out.String(), err
}

// wantLines fails the test unless every line in want appears in out.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// runToolStdin is runTool with stdin fed from input (and no REDLOCKD_ADDR).
func runToolStdin(t *testing.T, ctx context.Context, input, name string, args ...string) string {
	t.Helper()
	cmd := childproc.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := childproc.Run(cmd); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
