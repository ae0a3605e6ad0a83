package redistest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/logbuf"
)

// orphanEnv tells a re-run of this test binary to act as the test process
// that dies: it starts a server, prints its pid, then ends as the value says.
const orphanEnv = "REDISTEST_ORPHAN_END"

// TestServersDieWithTheTestProcess runs this test binary again as a child
// that starts a redis-server and then ends without running any cleanup,
// and checks that the server is gone afterwards: a panic in a goroutine
// (what -timeout does too), os.Exit, and SIGKILL from outside.
func TestServersDieWithTheTestProcess(t *testing.T) {
	for _, end := range []string{"panic", "exit", "sigkill"} {
		t.Run(end, func(t *testing.T) {
			cmd := childproc.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), orphanEnv+"="+end)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr logbuf.Buffer
			cmd.Stderr = &stderr
			if err := childproc.Start(cmd); err != nil {
				t.Fatal(err)
			}
			pid := readPid(t, bufio.NewScanner(stdout))
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // the failing case
			if end == "sigkill" {
				_ = cmd.Process.Kill()
			}
			if err := cmd.Wait(); err == nil {
				t.Fatalf("the child test process ended cleanly; want an abrupt end\n%s", stderr.String())
			}
			// The server's death is an event of an unrelated process: poll
			// for it, with a bound far beyond the kernel's immediate kill.
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("redis-server %d still runs 10s after the test process that started it died (%s)", pid, end)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestOrphanChild is the child of TestServersDieWithTheTestProcess; run by
// itself it does nothing.
func TestOrphanChild(t *testing.T) {
	end := os.Getenv(orphanEnv)
	if end == "" {
		t.Skip("only run as the child of TestServersDieWithTheTestProcess")
	}
	s := Start(t)
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	fmt.Printf("pid %d\n", pid)
	switch end {
	case "panic":
		go panic("redistest: the test process dies without cleanup")
	case "exit":
		os.Exit(3)
	}
	select {} // the panic ends the process, or the parent kills it
}

func readPid(t *testing.T, sc *bufio.Scanner) int {
	t.Helper()
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			go func() { // drain the rest so the child never blocks writing
				for sc.Scan() {
				}
			}()
			return pid
		}
	}
	t.Fatalf("the child test process printed no pid: %v", sc.Err())
	return 0
}

// alive reports whether pid runs: a zombie (dead, not yet reaped by its new
// parent) counts as gone.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestServerOutlivesTheThreadThatStartedIt starts a server from a goroutine
// that locks its thread and ends without unlocking it, so that the runtime
// ends the thread. The kernel sends the parent-death signal when the
// forking thread ends; the server must live on, so it cannot have been
// forked from that thread.
func TestServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	// The main thread never ends (the runtime parks it instead), so a
	// goroutine that lands on it keeps it, locked, until the test is over,
	// and the next try runs on another thread.
	release := make(chan struct{})
	defer close(release)
	type run struct {
		s   *Server
		tid int
	}
	var r run
	for r.s == nil {
		ran := make(chan run)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with us
			if syscall.Gettid() == os.Getpid() {
				ran <- run{}
				<-release
				runtime.UnlockOSThread()
				return
			}
			ran <- run{Start(t), syscall.Gettid()}
		}()
		r = <-ran
	}
	task := fmt.Sprintf("/proc/self/task/%d", r.tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); err != nil {
			break // the thread is gone: any parent-death signal is sent
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists 10s after its goroutine ended", task)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := pingWithin(r.s, 5*time.Second); err != nil {
		t.Fatalf("the server died with the thread its start ran on: %v\n%s", err, r.s.Output())
	}
}
