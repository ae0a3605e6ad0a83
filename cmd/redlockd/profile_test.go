package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfileWrittenAtShutdown: --cpuprofile leaves a gzip-compressed
// profile (the pprof format) once the server has shut down.
func TestCPUProfileWrittenAtShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	r := start(t, "--cpuprofile", path)
	c := r.client(t)
	lockOnce(t, c, "profiled")
	if code := r.stop(); code != 0 {
		t.Fatalf("exit %d after cancel, want 0", code)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzip-compressed: %v", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || len(body) == 0 {
		t.Fatalf("profile body: %d bytes, %v", len(body), err)
	}
}

func TestCPUProfileFlagHiddenAndChecked(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, envOf(nil), &out, &out); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	if strings.Contains(out.String(), cpuProfileFlag) {
		t.Errorf("--help lists --%s, a flag for the benchmark only", cpuProfileFlag)
	}
	out.Reset()
	bad := filepath.Join(t.TempDir(), "missing", "cpu.pprof")
	args := []string{"--listen", "127.0.0.1:0", "--cpuprofile", bad}
	if code := run(context.Background(), args, envOf(nil), &out, &out); code != exitUsage {
		t.Fatalf("unwritable --cpuprofile: exit %d, want %d; %s", code, exitUsage, out.String())
	}
	if !strings.Contains(out.String(), "invalid --cpuprofile") {
		t.Errorf("error %q does not name --cpuprofile", out.String())
	}
}
