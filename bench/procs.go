package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const startTimeout = 10 * time.Second

// listeningProc is a child process serving addr, started by the
// benchmark (nutcracker, the Go floors).
type listeningProc struct {
	addr string
	cmd  *exec.Cmd
}

// waitListening waits until cmd, started, accepts connections on addr.
// Past startTimeout it stops cmd and fails, with what why (when set)
// says of it.
func waitListening(cmd *exec.Cmd, addr, name string, why func() string) (*listeningProc, error) {
	p := &listeningProc{addr: addr, cmd: cmd}
	deadline := time.Now().Add(startTimeout)
	for {
		nc, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			nc.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			msg := ""
			if why != nil {
				msg = ": " + why()
			}
			return nil, fmt.Errorf("%s on %s not ready within %v%s", name, addr, startTimeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *listeningProc) pid() int { return p.cmd.Process.Pid }

func (p *listeningProc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// redisProc is one redis-server started by the benchmark.
type redisProc struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis runs redis-server on a free loopback port without
// persistence, and waits for its "Ready to accept connections" line.
func startRedis(dir string, extra ...string) (*redisProc, error) {
	var last error
	for range 5 { // the port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p, err := runRedis(dir, port, extra...)
		if err == nil {
			return p, nil
		}
		last = err
	}
	return nil, last
}

func runRedis(dir string, port int, extra ...string) (*redisProc, error) {
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "notice"}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server (must be on PATH): %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var tail []string
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- nil
				io.Copy(io.Discard, out)
				return
			}
			tail = append(tail, sc.Text())
		}
		ready <- fmt.Errorf("redis-server on port %d exited: %s", port, strings.Join(tail, "\n"))
	}()
	select {
	case err = <-ready:
	case <-time.After(startTimeout):
		err = errors.New("redis-server did not start in time")
	}
	p := &redisProc{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *redisProc) pid() int { return p.cmd.Process.Pid }

func (p *redisProc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// buildRedlockd compiles ./cmd/redlockd of the repository this module
// belongs to (its replace directive points there) into dir, as a user
// would build it: from the repository's own module, with its go.mod.
func buildRedlockd(dir string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/redlockd/redlockd").Output()
	if err != nil {
		return "", fmt.Errorf("finding the redlockd module: %w", err)
	}
	bin := filepath.Join(dir, "redlockd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/redlockd")
	cmd.Dir = strings.TrimSpace(string(out))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/redlockd: %w\n%s", err, msg)
	}
	return bin, nil
}

// proxyProc is one redlockd binary running as a child process, so that its
// RSS and CPU are its own.
type proxyProc struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
}

// startProxy runs bin over backends on a free loopback port with JSON
// logs, plus args, and returns once it logged its address. Its warnings
// and errors go to stderr.
func startProxy(bin string, backends []string, args ...string) (*proxyProc, error) {
	args = append([]string{"--listen", "127.0.0.1:0", "--log-format", "json",
		"--backends", strings.Join(backends, ",")}, args...)
	cmd := exec.Command(bin, args...)
	logs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	p := &proxyProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		followLog(logs, ready)
		_ = cmd.Wait()
	}()
	select {
	case p.addr = <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v)", bin, cmd.ProcessState)
	case <-time.After(startTimeout):
		p.kill()
		return nil, fmt.Errorf("%s not ready within %v", bin, startTimeout)
	}
}

// followLog sends the address of the "ready to accept connections" line,
// and copies every line above info level to stderr, until rd ends.
func followLog(rd io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintf(os.Stderr, "redlockd: %s\n", sc.Bytes())
			continue
		}
		if addr, ok := e["addr"].(string); ok && e["msg"] == "ready to accept connections" {
			select {
			case ready <- addr:
			default:
			}
		}
		if lvl := e["level"]; lvl != "INFO" && lvl != "DEBUG" {
			fmt.Fprintf(os.Stderr, "redlockd: %s\n", sc.Bytes())
		}
	}
	_, _ = io.Copy(io.Discard, rd)
}

func (p *proxyProc) pid() int { return p.cmd.Process.Pid }

// stop shuts redlockd down as SIGTERM does (it writes its profile then),
// and kills it if that takes too long.
func (p *proxyProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

func (p *proxyProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// raiseNoFile lifts the open-file limit to its hard maximum; children
// inherit it.
func raiseNoFile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// flushAll empties the backends between runs, so that no run starts with
// the keys of the one before it held.
func flushAll(ctx context.Context, addrs []string) error {
	for _, a := range addrs {
		nc, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			return err
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.WriteString(nc, "FLUSHALL\r\n")
		if err == nil {
			var line string
			line, err = bufio.NewReader(nc).ReadString('\n')
			if err == nil && line != "+OK\r\n" {
				err = fmt.Errorf("FLUSHALL on %s: %q", a, line)
			}
		}
		nc.Close()
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}
