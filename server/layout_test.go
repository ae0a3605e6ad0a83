package server_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/redlockd/redlockd/"

// TestLayout holds the rooms to what they own: a leaf utility under
// internal/ imports nothing of the project outside internal/, nor does
// backend/wire, the connection layer, which knows nothing of quorum; the
// embedded engine (backend/embedded) imports of the project only quorum,
// internal/, backend for the kind table and backend/wire for its reply
// type, and backend never imports the engine; no production file (a
// non-test file outside testkit/) imports a test harness, so no harness
// ships in the binary.
func TestLayout(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// Other modules (compat/, bench/) and what is not Go.
			if rel == "compat" || rel == "bench" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			own, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			if strings.HasPrefix(rel, "internal/") && !strings.HasPrefix(own, "internal/") {
				t.Errorf("%s: a leaf utility imports %s", rel, p)
			}
			if strings.HasPrefix(rel, "backend/wire/") && !strings.HasPrefix(own, "internal/") {
				t.Errorf("%s: the connection layer imports %s", rel, p)
			}
			if strings.HasPrefix(rel, "backend/embedded/") && !strings.HasPrefix(own, "internal/") &&
				own != "quorum" && own != "backend" && own != "backend/wire" {
				t.Errorf("%s: the embedded engine imports %s", rel, p)
			}
			if strings.HasPrefix(rel, "backend/") && !strings.HasPrefix(rel, "backend/embedded/") && own == "backend/embedded" {
				t.Errorf("%s: a Redis node imports the embedded engine %s", rel, p)
			}
			if !strings.HasPrefix(rel, "testkit/") && strings.HasPrefix(own, "testkit/") {
				t.Errorf("%s: production code imports the test harness %s", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s: not the module's tree", files, root)
	}
}
