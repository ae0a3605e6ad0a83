package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
)

// A node script that needs the backends looked at from outside the
// client (where a key lives, that a release removed it everywhere) prints
// "pause <hook> <json>" and waits; the test runs the hook on the target's
// backends and answers "go", or "fail <why>", on the script's stdin.

// pauseArg is the JSON of a pause line: the keys, the database they
// should live in, and the value they should hold.
type pauseArg struct {
	DB    int      `json:"db"`
	Keys  []string `json:"keys"`
	Value string   `json:"value"`
}

// pauseHooks are the hooks a script may name.
var pauseHooks = map[string]func(context.Context, *testing.T, target, pauseArg) error{
	// held: on every backend, each key of db holds value.
	"held": func(ctx context.Context, t *testing.T, tg target, a pauseArg) error {
		return eachBackendKey(t, tg, a, func(c *redis.Client, key string) error {
			v, err := c.Get(ctx, key).Result()
			if err != nil || v != a.Value {
				return fmt.Errorf("GET %s in db %d = %q (%v), want %q", key, a.DB, v, err, a.Value)
			}
			return nil
		})
	},
	// gone: no backend has any of the keys in db.
	"gone": func(ctx context.Context, t *testing.T, tg target, a pauseArg) error {
		return eachBackendKey(t, tg, a, func(c *redis.Client, key string) error {
			if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
				return fmt.Errorf("EXISTS %s in db %d = %d (%v), want 0", key, a.DB, n, err)
			}
			return nil
		})
	},
	// drop: delete the keys of db on every backend, behind the client's
	// back (what an expiry or an operator's FLUSHALL does).
	"drop": func(ctx context.Context, t *testing.T, tg target, a pauseArg) error {
		return eachBackendKey(t, tg, a, func(c *redis.Client, key string) error {
			return c.Del(ctx, key).Err()
		})
	},
}

// eachBackendKey calls fn for every key of a on every backend of tg,
// through a client of a.DB, and joins what failed, naming the backend.
func eachBackendKey(t *testing.T, tg target, a pauseArg, fn func(*redis.Client, string) error) error {
	var errs []error
	for _, s := range tg.backends {
		c := backendDB(t, s, a.DB)
		for _, k := range a.Keys {
			if err := fn(c, k); err != nil {
				errs = append(errs, fmt.Errorf("backend %s: %w", s.Addr(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// runNodeSteps runs `node script group` against tg, answering its pause
// lines, and returns its output (stdout, then stderr). A non-zero exit
// fails the test.
func runNodeSteps(t *testing.T, tg target, script, group string) string {
	t.Helper()
	node := nodeReady(t)
	ctx := testCtx(t)
	cmd := childproc.CommandContext(ctx, node, script, group)
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "REDLOCKD_ADDR="+tg.addr, "REDLOCKD_OTHER_ADDR="+tg.other, "TARGET="+tg.name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	out := answerPauses(ctx, t, tg, stdout, stdin)
	_ = stdin.Close()
	err = cmd.Wait()
	out += stderr.String()
	if err != nil {
		t.Fatalf("node %s %s against %s: %v\n%s", script, group, tg.name, err, out)
	}
	return out
}

// answerPauses reads the script's stdout to its end, running the hook of
// each pause line and writing the answer, and returns what it read.
func answerPauses(ctx context.Context, t *testing.T, tg target, stdout io.Reader, stdin io.Writer) string {
	t.Helper()
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		rest, ok := strings.CutPrefix(line, "pause ")
		if !ok {
			continue
		}
		answer := "go"
		if err := runPause(ctx, t, tg, rest); err != nil {
			t.Errorf("pause %s: %v", rest, err)
			answer = "fail " + strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		if _, err := io.WriteString(stdin, answer+"\n"); err != nil {
			t.Errorf("answering pause %s: %v", rest, err)
		}
	}
	return out.String()
}

// runPause runs the hook named by a pause line's "<hook> <json>".
func runPause(ctx context.Context, t *testing.T, tg target, line string) error {
	name, js, _ := strings.Cut(line, " ")
	hook, ok := pauseHooks[name]
	if !ok {
		return fmt.Errorf("unknown hook %q", name)
	}
	var a pauseArg
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		return fmt.Errorf("bad argument %q: %w", js, err)
	}
	return hook(ctx, t, tg, a)
}
