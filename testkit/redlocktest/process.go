package redlocktest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Build compiles the main package pkg, a path from the module's root such
// as "./cmd/redlockd", into the test's temporary directory and returns the
// binary's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	cmd := childproc.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := childproc.CombinedOutput(cmd); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Process is one redlockd binary running as a child process, its JSON log
// lines collected, so that a test can signal it, kill it and wait for
// what it logs.
type Process struct {
	// Addr is the address it listens on, read from its "ready" log line.
	Addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	mu   sync.Mutex
	logs []map[string]any
	more chan struct{} // closed and replaced at each new line
}

// StartProcess runs bin (built by Build) over servers with args, as
// StartBinary does.
func StartProcess(t testing.TB, bin string, servers []*redistest.Server, args ...string) *Process {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return StartBinary(t, bin, append([]string{"--backends", strings.Join(addrs, ",")}, args...)...)
}

// StartBinary runs bin (built by Build) with args, on a free loopback port
// with JSON logs, and returns once it logged the address it listens on.
// The test's cleanup kills it.
func StartBinary(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	cmd := childproc.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), more: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.follow(stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	ready, _ := p.WaitLog(t, 0, "ready to accept connections")
	p.Addr, _ = ready["addr"].(string)
	return p
}

// follow collects each log line of rd (a line that is not JSON as its
// msg) until the process closes it.
func (p *Process) follow(rd io.Reader) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			e = map[string]any{"msg": sc.Text()}
		}
		p.mu.Lock()
		p.logs = append(p.logs, e)
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
	}
}

// WaitLog returns the first log line from index from on whose msg
// contains msg, and the index after it, waiting for it (up to 30s; the
// process must not exit meanwhile).
func (p *Process) WaitLog(t testing.TB, from int, msg string) (map[string]any, int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		for i := from; i < len(p.logs); i++ {
			if m, _ := p.logs[i]["msg"].(string); strings.Contains(m, msg) {
				e := p.logs[i]
				p.mu.Unlock()
				return e, i + 1
			}
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-p.done:
			t.Fatalf("redlockd exited (%v) before logging %q", p.cmd.ProcessState, msg)
		case <-timeout:
			t.Fatalf("redlockd logged no %q within 30s", msg)
		}
	}
}

// Signal sends sig to the process and waits until it has exited.
func (p *Process) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// Pause stops the process (SIGSTOP) without ending it: its sockets stay
// open and unanswered until Resume.
func (p *Process) Pause(t testing.TB) { p.Send(t, syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume(t testing.TB) { p.Send(t, syscall.SIGCONT) }

// Send sends sig to the process and returns at once.
func (p *Process) Send(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Errorf("redlocktest: signal %v: %v", sig, err)
	}
}
