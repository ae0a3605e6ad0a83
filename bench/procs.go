package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const startTimeout = 10 * time.Second

// redisProc is one redis-server started by the benchmark.
type redisProc struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis runs redis-server on a free loopback port without
// persistence, and waits for its "Ready to accept connections" line.
func startRedis(dir string) (*redisProc, error) {
	var last error
	for range 5 { // the port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p, err := runRedis(dir, port)
		if err == nil {
			return p, nil
		}
		last = err
	}
	return nil, last
}

func runRedis(dir string, port int) (*redisProc, error) {
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "notice")
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

// proxyProc is redlockd, run as a child of this program (the same binary
// in serve mode) so that its RSS and CPU profile are its own.
type proxyProc struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startProxy runs redlockd over backends; profile, when set, is where the
// child writes a CPU profile of its whole run.
func startProxy(backends []string, profile string, nodeTimeout time.Duration) (*proxyProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envServe+"="+strings.Join(backends, ","), envProfile+"="+profile,
		envNodeTimeout+"="+nodeTimeout.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxyProc{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		p.stop()
		return nil, fmt.Errorf("redlockd child did not start: %q, %v", line, err)
	}
	p.addr = addr
	return p, nil
}

// stop closes the child's stdin, its signal to shut down (and write its
// profile), and waits for it.
func (p *proxyProc) stop() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return <-done
	}
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
