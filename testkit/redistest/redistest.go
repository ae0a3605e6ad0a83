// Package redistest starts real redis-server processes for tests: each on a
// free port of 127.0.0.1, with persistence off and its own temporary dir,
// killed by t.Cleanup. It also lets a test crash, pause and restart them.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/logbuf"
)

// errExited marks a server that died during start-up (a port taken
// since freePort probed it, or bad args).
var errExited = errors.New("exited during start-up")

const (
	startTimeout = 5 * time.Second
	startTries   = 5
)

// Server is one redis-server process.
type Server struct {
	bin  string
	port int
	dir  string
	args []string
	out  *logbuf.Buffer // stdout and stderr of every run
	tls  *tls.Config    // set: the port speaks only TLS, and this is how to reach it
	// readyBefore counts readyLine in out before the current run started.
	readyBefore int

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited and been reaped
	client *redis.Client
}

// Start runs a redis-server with args appended to the defaults (a later
// duplicate option wins, as in redis.conf). It fails the test if
// redis-server is not on PATH: CI installs it, so missing it is a broken
// environment, not a reason to skip.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, nil, args)
}

// StartTLS runs a redis-server whose port speaks only TLS (the plain port
// is off). args must name the server's files (--tls-cert-file,
// --tls-key-file, --tls-ca-cert-file, and --tls-auth-clients as wanted);
// client is how the harness itself connects (start-up check, Client):
// the CA it trusts and, when the server wants one, its certificate.
func StartTLS(t testing.TB, client *tls.Config, args ...string) *Server {
	t.Helper()
	return start(t, client, args)
}

func start(t testing.TB, client *tls.Config, args []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH (apt-get install redis-server): %v", err)
	}
	s := &Server{bin: bin, dir: t.TempDir(), args: args, out: &logbuf.Buffer{}, tls: client}
	t.Cleanup(s.cleanup)
	for try := 1; ; try++ {
		s.port = freePort(t)
		err := s.run()
		if err == nil {
			return s
		}
		// Another process can take the port between our probe and the
		// server's bind; an early exit means try another port.
		if !errors.Is(err, errExited) || try == startTries {
			t.Fatalf("redistest: %v\n%s", err, s.Output())
		}
	}
}

// StartN starts n servers with the same args.
func StartN(t testing.TB, n int, args ...string) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, args...)
	}
	return servers
}

// Addr returns "127.0.0.1:port" (the TLS port of a StartTLS server).
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Output returns everything the server has written to stdout and stderr.
func (s *Server) Output() string { return s.out.String() }

// Kill sends SIGKILL and waits for the process to exit: a crash, losing
// every key. It does nothing if the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop sends SIGSTOP: the server keeps accepting TCP connections (the
// kernel does) but answers nothing until Cont.
func (s *Server) Stop() { s.signal(syscall.SIGSTOP) }

// Cont sends SIGCONT, resuming a stopped server.
func (s *Server) Cont() { s.signal(syscall.SIGCONT) }

// Restart kills the server if it runs and starts it again on the same port,
// dir and args. With the default args it comes back empty, as a crashed
// master without persistence does.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	fmt.Fprintf(s.out, "--- redistest: restart ---\n")
	if err := s.run(); err != nil {
		t.Fatalf("redistest: restart: %v\n%s", err, s.Output())
	}
}

// Client returns a go-redis client connected to the server (with the
// --requirepass password, if any), for inspecting its state directly. It is
// closed by the test's cleanup.
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{
			Addr:            s.Addr(),
			Password:        s.password(),
			TLSConfig:       s.tls,
			DisableIdentity: true,
			// A test probing a stopped server needs its ctx to count.
			ContextTimeoutEnabled: true,
		})
	}
	return s.client
}

func (s *Server) password() string {
	pw := ""
	for i := 0; i+1 < len(s.args); i++ {
		if s.args[i] == "--requirepass" {
			pw = s.args[i+1] // the last one wins, as in redis-server
		}
	}
	return pw
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

func (s *Server) cleanup() {
	s.mu.Lock()
	c := s.client
	s.client = nil
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	s.Kill()
}

// readyLine is what redis-server logs once it accepts connections.
const readyLine = "Ready to accept connections"

// run starts the process and waits until it answers PING.
func (s *Server) run() error {
	port := []string{"--port", strconv.Itoa(s.port)}
	if s.tls != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}
	}
	args := append(append(port,
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir,
	), s.args...)
	cmd := childproc.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	s.readyBefore = strings.Count(s.out.String(), readyLine)
	if err := childproc.Start(cmd); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go s.reap(cmd, done)
	return s.waitReady(done)
}

// reap waits for the process so that it never lingers as a zombie, and
// forgets it once gone.
func (s *Server) reap(cmd *exec.Cmd, done chan struct{}) {
	_ = cmd.Wait()
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
	close(done)
}

// waitReady polls until the server answers PING. Polling is the only way
// to wait for an external process that gives no readiness signal.
func (s *Server) waitReady(done chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server on port %d: %w", s.port, errExited)
		default:
		}
		// Our own process must say it is ready: another test's server may
		// have taken a port this one just freed (a Restart), and would
		// answer the PING in its place.
		if strings.Count(s.out.String(), readyLine) > s.readyBefore && Ping(s.Addr(), s.tls) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("redis-server on port %d did not answer PING within %v", s.port, startTimeout)
}

// Ping reports whether a Redis answers PING at addr (over TLS when tlsConf
// is set). NOAUTH counts: the server is up, it only wants the password;
// LOADING does not.
func Ping(addr string, tlsConf *tls.Config) bool {
	var conn net.Conn
	var err error
	d := &net.Dialer{Timeout: 500 * time.Millisecond}
	if tlsConf != nil {
		conn, err = tls.DialWithDialer(d, "tcp", addr, tlsConf)
	} else {
		conn, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// freePort asks the kernel for a free port and releases it for the server.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// CheckStrings compares the string keys of c's server with want ("" for
// absent).
func CheckStrings(t *testing.T, c *redis.Client, want map[string]string) {
	t.Helper()
	for k, w := range want {
		v, err := c.Get(t.Context(), k).Result()
		if errors.Is(err, redis.Nil) {
			v, err = "", nil
		}
		if err != nil || v != w {
			t.Errorf("%s = %q, %v; want %q", k, v, err, w)
		}
	}
}
