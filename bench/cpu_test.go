package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 7 and 3 in each line.
	rest := " S 1 1 1 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 4 0 123 456 78 18446744073709551615\n"
	for _, tt := range []struct {
		stat string
		want int64
		bad  bool
	}{
		{"4242 (redlockd)" + rest, 10, false},
		{"4242 (redis-server *:6379)" + rest, 10, false},
		{"4242 (a) b (c))" + rest, 10, false}, // a name may hold ") "
		{"4242 (x) S 1 1 1", 0, true},
		{"4242 x S 1 1 1 0 -1 4194560 100 0 0 0 7 3", 0, true},
		{"4242 (x) S 1 1 1 0 -1 4194560 100 0 0 0 seven 3 0", 0, true},
	} {
		got, err := parseStatTicks([]byte(tt.stat))
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("parseStatTicks(%q) = %d, %v; want %d, error %v", tt.stat, got, err, tt.want, tt.bad)
		}
	}
}

// TestProcTicksCountsOwnCPU reads this process's /proc entry while it
// spins, until the count moves.
func TestProcTicksCountsOwnCPU(t *testing.T) {
	before, err := procTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for x := 0; ; x++ {
		now, err := procTicks(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU ticks still %d after 10s of spinning", now)
		}
	}
}

func TestClockTicks(t *testing.T) {
	if n := clockTicks(); n <= 0 {
		t.Fatalf("clockTicks() = %d", n)
	}
}

func TestParseInfoStats(t *testing.T) {
	info := "# Stats\r\ntotal_connections_received:4\r\ntotal_commands_processed:1200\r\n" +
		"instantaneous_ops_per_sec:0\r\ntotal_reads_processed:300\r\ntotal_writes_processed:290\r\n"
	got, err := parseInfoStats(info)
	if err != nil || got != (serverStats{1200, 300}) {
		t.Fatalf("parseInfoStats = %+v, %v; want {1200 300}", got, err)
	}
	if _, err := parseInfoStats("# Stats\r\ntotal_commands_processed:1\r\n"); err == nil {
		t.Error("INFO without total_reads_processed parsed")
	}
	if _, err := parseInfoStats("total_commands_processed:x\r\ntotal_reads_processed:1\r\n"); err == nil {
		t.Error("a non-number parsed")
	}
}

func TestParseIOSyscalls(t *testing.T) {
	io := "rchar: 3217\nwchar: 1210\nsyscr: 12\nsyscw: 7\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
	got, ok := parseIOSyscalls(io)
	if !ok || got != (syscalls{reads: 12, writes: 7}) {
		t.Fatalf("parseIOSyscalls = %+v, %v; want {12 7}, true", got, ok)
	}
	for _, bad := range []string{"", "syscr: 12\n", "syscr: x\nsyscw: 7\n"} {
		if got, ok := parseIOSyscalls(bad); ok {
			t.Errorf("parseIOSyscalls(%q) = %+v, true; want false", bad, got)
		}
	}
}

// TestProcSyscallsCountsOwnCalls writes to a pipe and reads it back a
// known number of times and finds at least as many calls counted.
func TestProcSyscallsCountsOwnCalls(t *testing.T) {
	before, ok := procSyscalls(os.Getpid())
	if !ok {
		t.Skip("/proc/self/io is not readable here")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	const n = 50
	buf := make([]byte, 1)
	for range n {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	after, ok := procSyscalls(os.Getpid())
	if !ok {
		t.Fatal("/proc/self/io became unreadable")
	}
	if d := after.minus(before); d.reads < n || d.writes < n {
		t.Fatalf("counted %d reads and %d writes over %d of each", d.reads, d.writes, n)
	}
}
