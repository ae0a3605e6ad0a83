package main

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"pseudo-version of a checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202004101-6bbcf8def503+dirty"},
			Settings: vcs("6bbcf8def5034d970b7038265375f80570f5b373", "true")}, "v0.0.0-20261202004101-6bbcf8def503+dirty"},
		{"devel with vcs", debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("6bbcf8def5034d970b7038265375f80570f5b373", "false")}, "devel-6bbcf8def503"},
		{"devel with changes", debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("6bbcf8def5034d970b7038265375f80570f5b373", "true")}, "devel-6bbcf8def503+dirty"},
		{"nothing known", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	}
	for _, tt := range tests {
		if got := versionOf(&tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestBinaryVersion: the built binary reports its module version and, for
// a build from a git checkout, the commit it was built from.
func TestBinaryVersion(t *testing.T) {
	bin := redlocktest.Build(t, "./cmd/redlockd")
	out, err := childproc.Output(childproc.Command(bin, "--version"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(out))
	if !strings.HasPrefix(got, "redlockd ") || got == "redlockd dev" {
		t.Fatalf("--version = %q", got)
	}
	meta, err := childproc.Output(childproc.Command("go", "version", "-m", bin))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`vcs\.revision=([0-9a-f]{12})`).FindSubmatch(meta)
	if m == nil {
		t.Skipf("--version = %q; the go command recorded no commit (not a git clone, a worktree, whose .git is a file, or -buildvcs=false)", got)
	}
	if !strings.Contains(got, string(m[1])) {
		t.Fatalf("--version = %q, want the commit %s in it", got, m[1])
	}
}
