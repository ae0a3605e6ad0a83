package commands

import (
	"fmt"
	"testing"
)

func TestPipelineClassification(t *testing.T) {
	tests := []struct {
		args    []string
		keys    string
		barrier bool
	}{
		{[]string{"SET", "k", "v", "NX", "PX", "10"}, "[k]", false},
		{[]string{"lock", "k", "10"}, "[k]", false},
		{[]string{"DEL", "a", "b"}, "[a b]", false},
		{[]string{"EVALSHA", "sha", "2", "a", "b", "tok"}, "[a b]", false},
		{[]string{"EVAL", "body", "x", "a"}, "[body x a]", false}, // bad numkeys: every argument
		{[]string{"PING"}, "[]", false},
		{[]string{"AUTH", "pw"}, "", true},
		{[]string{"hello", "3"}, "", true},
		{[]string{"SELECT", "0"}, "", true},
		{[]string{"QUIT"}, "", true},
		{[]string{"RESET"}, "", true},
		{[]string{"CLIENT", "SETNAME", "x"}, "", true},
		{[]string{"NOSUCHCOMMAND"}, "", true},
		{[]string{"AVERYLONGCOMMANDNAMEOVERSIXTEEN"}, "", true},
	}
	for _, tc := range tests {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		keys, ok := PipelineKeys(args)
		if ok == tc.barrier {
			t.Errorf("%v: concurrent %v; want barrier %v", tc.args, ok, tc.barrier)
			continue
		}
		if got := fmt.Sprintf("%s", keys); ok && got != tc.keys {
			t.Errorf("%v: keys %s, want %s", tc.args, got, tc.keys)
		}
	}
}

func TestMayBlock(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"LOCK", "k", "100", "WAIT", "500"}, true},
		{[]string{"lock", "k", "100", "TOKEN", "t", "wait", "5"}, true},
		{[]string{"LOCK", "k", "100"}, false},
		{[]string{"LOCK", "wait", "100"}, false}, // a key named wait
		{[]string{"SET", "k", "wait", "NX"}, false},
		{[]string{"LOCK", "k", "100", "TOKEN", "wait"}, false}, // a token spelled wait
		{[]string{"LOCK", "k", "100", "OWNER", "WAIT"}, false},
		{[]string{"LOCK", "k", "100", "WAIT", "0"}, false}, // does not wait
		{[]string{"LOCK", "k", "100", "WAIT"}, false},      // syntax error
		{[]string{"LOCK", "k", "100", "WAIT", "5", "WAIT", "5"}, false},
		{[]string{"LOCK", "k", "100", "KEEPALIVE", "FENCE", "wait", "5"}, true},
		{[]string{"EVAL", "body", "1", "k", "wait"}, false},
		{[]string{"NOSUCHCOMMAND", "wait"}, false},
		{[]string{}, false},
	}
	for _, tc := range tests {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		if got := MayBlock(args); got != tc.want {
			t.Errorf("MayBlock(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// The proxy asks MayBlock before every batch: a LOCK without WAIT, the
// common case, must cost it no allocation.
func TestMayBlockLockWithoutWaitAllocatesNothing(t *testing.T) {
	args := [][]byte{[]byte("LOCK"), []byte("k"), []byte("1000"), []byte("KEEPALIVE"), []byte("TOKEN"), []byte("t")}
	if n := testing.AllocsPerRun(100, func() { MayBlock(args) }); n != 0 {
		t.Fatalf("MayBlock(LOCK without WAIT) allocates %v times, want 0", n)
	}
}

// A LOCK with a WAIT is read by parseLock's own option scanner, which
// allocates nothing either.
func TestMayBlockLockWithWaitAllocatesNothing(t *testing.T) {
	args := [][]byte{[]byte("LOCK"), []byte("k"), []byte("100"), []byte("wait"), []byte("500"), []byte("TOKEN"), []byte("t"), []byte("FENCE")}
	if !MayBlock(args) {
		t.Fatal("LOCK … WAIT 500 does not block")
	}
	if n := testing.AllocsPerRun(100, func() { MayBlock(args) }); n != 0 {
		t.Fatalf("MayBlock(LOCK … WAIT) allocates %v times, want 0", n)
	}
}
