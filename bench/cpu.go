package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat
// (getconf CLK_TCK); 100 when getconf cannot say, as on every Linux build
// this runs on.
func clockTicks() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || n <= 0 {
		return 100
	}
	return n
}

// procTicks is the CPU a process has used, user and system, summed over
// its threads, in clock ticks.
func procTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatTicks(b)
}

// parseStatTicks reads utime+stime (fields 14 and 15) from the text of
// /proc/<pid>/stat. The command name (field 2) is in parentheses and may
// hold spaces and parentheses itself, so fields are counted from the last
// ')'.
func parseStatTicks(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the name", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return utime + stime, nil
}

// syscalls is how many read and write system calls a process has made
// (syscr and syscw of /proc/<pid>/io, every thread's together): recv,
// send, readv and the like count, and so does a read that found nothing
// (EAGAIN) and sent its goroutine to the poller.
type syscalls struct{ reads, writes int64 }

func (a syscalls) minus(b syscalls) syscalls { return syscalls{a.reads - b.reads, a.writes - b.writes} }

// procSyscalls reads pid's counts; ok is false where /proc/<pid>/io
// cannot be read (another user's process, a kernel without task I/O
// accounting).
func procSyscalls(pid int) (syscalls, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return syscalls{}, false
	}
	return parseIOSyscalls(string(b))
}

// parseIOSyscalls picks syscr and syscw from the text of /proc/<pid>/io.
func parseIOSyscalls(text string) (syscalls, bool) {
	var s syscalls
	found := 0
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "syscr" && k != "syscw") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return syscalls{}, false
		}
		if k == "syscr" {
			s.reads = n
		} else {
			s.writes = n
		}
		found++
	}
	return s, found == 2
}

// serverStats is what one redis-server counted so far: commands run and
// read events handled (INFO stats), so that commands per read tells how
// many commands arrived together.
type serverStats struct{ commands, reads int64 }

func (a serverStats) plus(b serverStats) serverStats {
	return serverStats{a.commands + b.commands, a.reads + b.reads}
}

func (a serverStats) minus(b serverStats) serverStats {
	return serverStats{a.commands - b.commands, a.reads - b.reads}
}

// readStats asks the redis-server at addr for INFO stats.
func readStats(addr string) (serverStats, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return serverStats{}, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "INFO stats\r\n"); err != nil {
		return serverStats{}, err
	}
	rd := bufio.NewReader(nc)
	head, err := rd.ReadString('\n')
	if err != nil {
		return serverStats{}, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") {
		return serverStats{}, fmt.Errorf("INFO on %s answered %q", addr, head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd, body); err != nil {
		return serverStats{}, err
	}
	return parseInfoStats(string(body))
}

// parseInfoStats picks total_commands_processed and total_reads_processed
// from INFO text.
func parseInfoStats(info string) (serverStats, error) {
	var s serverStats
	found := 0
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		dst := map[string]*int64{"total_commands_processed": &s.commands, "total_reads_processed": &s.reads}[k]
		if dst == nil {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("INFO %s: %w", k, err)
		}
		*dst = n
		found++
	}
	if found != 2 {
		return s, errors.New("INFO stats lacks total_commands_processed or total_reads_processed")
	}
	return s, nil
}
