// Package childproc starts the processes tests run (redis-server, proxies,
// client tools) so that each dies with the process that started it,
// however that process ends: a failed test's cleanup, but also a panic in
// another goroutine, the test binary's -timeout, os.Exit or SIGKILL, none
// of which runs t.Cleanup.
//
// On Linux every child gets SIGKILL as its parent-death signal. The kernel
// sends it when the thread that forked the child ends, not the process, and
// the Go runtime ends a thread whenever a goroutine exits while locked to
// it (as code entering a network namespace does). So every child is forked
// from one goroutine that locks its thread and never returns: that thread
// lives exactly as long as the process.
//
// A child also leads its own process group, and a cancelled context kills
// the whole group, so what a tool started itself (npm's scripts, say)
// goes with it. Only direct children are covered when the test process
// dies abruptly: the kernel has no parent-death signal for grandchildren.
package childproc

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Command is exec.Command for a child that Start, Run, Output and
// CombinedOutput of this package tie to the test process's life.
func Command(name string, args ...string) *exec.Cmd {
	return CommandContext(context.Background(), name, args...)
}

// CommandContext is exec.CommandContext, with a cancellation that kills
// the child's whole process group.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return killGroup(cmd) }
	return cmd
}

// Start starts cmd (made by Command, CommandContext or exec itself) with
// the parent-death signal set, from the one thread that outlives every
// goroutine.
func Start(cmd *exec.Cmd) error {
	tie(cmd)
	once.Do(func() { go starter() })
	done := make(chan error, 1)
	starts <- start{cmd, done}
	return <-done
}

// Run is Start followed by cmd.Wait.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Output runs cmd and returns its standard output, as exec's Output does
// (the standard error lands in an *exec.ExitError's Stderr).
func Output(cmd *exec.Cmd) ([]byte, error) {
	if cmd.Stdout != nil {
		return nil, errors.New("childproc: Stdout already set")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	captured := cmd.Stderr == nil
	if captured {
		cmd.Stderr = &stderr
	}
	err := Run(cmd)
	var ee *exec.ExitError
	if captured && errors.As(err, &ee) {
		ee.Stderr = stderr.Bytes()
	}
	return stdout.Bytes(), err
}

// CombinedOutput runs cmd and returns its standard output and error
// together.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	if cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("childproc: Stdout or Stderr already set")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := Run(cmd)
	return out.Bytes(), err
}

type start struct {
	cmd  *exec.Cmd
	done chan<- error
}

var (
	once   sync.Once
	starts = make(chan start)
)

// starter forks every child. It locks its thread and never returns, so
// the runtime never ends that thread and no child's parent-death signal
// fires before the process itself ends.
func starter() {
	runtime.LockOSThread()
	for s := range starts {
		s.done <- s.cmd.Start()
	}
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	// The negative pid names the group the child leads.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return cmd.Process.Kill()
	}
	return nil
}
