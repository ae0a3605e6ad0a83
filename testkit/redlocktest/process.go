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

// Process is one redlockd binary running as a child process, so that a
// test can kill it.
type Process struct {
	// Addr is the address it listens on, read from its "ready" log line.
	Addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
}

// StartProcess runs bin (built by Build) over servers with args, on a free
// loopback port with JSON logs, and returns once it logged the address it
// listens on. The test's cleanup kills it.
func StartProcess(t testing.TB, bin string, servers []*redistest.Server, args ...string) *Process {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	args = append([]string{"--listen", "127.0.0.1:0", "--log-format", "json",
		"--backends", strings.Join(addrs, ",")}, args...)
	cmd := childproc.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		readyAddr(stderr, ready)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.Addr = <-ready:
	case <-p.done:
		t.Fatal("redlockd exited before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("redlockd not ready within 30s")
	}
	return p
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
func (p *Process) Pause(t testing.TB) { p.signal(t, syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume(t testing.TB) { p.signal(t, syscall.SIGCONT) }

func (p *Process) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Errorf("redlocktest: signal %v: %v", sig, err)
	}
}

// readyAddr sends the address of the "ready" log line, then drains rd
// until the process closes it.
func readyAddr(rd io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil && e["msg"] == "ready to accept connections" {
			addr, _ := e["addr"].(string)
			select {
			case ready <- addr:
			default:
			}
		}
	}
}
