package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// servedNames scrapes /metrics of a running redlockd over real
// redis-servers, after one lock and its release so that every family has
// a series, and returns the metric names it serves; a histogram's family
// name counts too, beside its _bucket, _sum and _count series.
func servedNames(t *testing.T) map[string]bool {
	t.Helper()
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := context.Background()
	res, err := c.Do(ctx, "LOCK", "names", "10000").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "UNLOCK", "names", res[0]).Err(); err != nil {
		t.Fatal(err)
	}
	_, body := in.Page(t, "/metrics")
	names := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[2]+s] = true
				}
			}
		}
	}
	return names
}

// promNames are the metric names a PromQL expression reads: identifiers
// that are not functions, keywords, label names or label values.
func promNames(expr string) []string {
	s := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)                                        // strings
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")                                                     // label matchers
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ")                                                    // ranges
	s = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(s, " ") // label lists
	var out []string
	for _, m := range regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`).FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") {
			continue // a function or an aggregation
		}
		switch m {
		case "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan", "Inf", "NaN":
			continue
		}
		out = append(out, m)
	}
	return out
}

func TestPromNames(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (instance) (redlockd_backend_up{shard=""}) < quorum + 1`:   "redlockd_backend_up quorum",
		`rate(redlockd_x_total{outcome="no_quorum"}[5m]) > 0`:              "redlockd_x_total",
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m])))`:       "a_bucket",
		`redlockd_backends_voting < redlockd_quorum + 1 or on(instance) b`: "redlockd_backends_voting redlockd_quorum b",
	} {
		if got := strings.Join(promNames(expr), " "); got != want {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}

// documentedExprs are the PromQL expressions of the docs' alert list and
// every inline code span of docs/ and the README that names a redlockd_
// series, by where they are.
func documentedExprs(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	span := regexp.MustCompile("`([^`]+)`")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			for _, m := range span.FindAllStringSubmatch(line, -1) {
				if strings.Contains(m[1], "redlockd_") && !strings.Contains(m[1], "redlockd_version") {
					out[f] = append(out[f], m[1])
				}
			}
		}
	}
	return out
}

// TestDocumentedMetricsAreServed: every metric that the documented alerts,
// the docs and the Grafana dashboard query is one a running redlockd
// serves. A bare name such as "quorum" is a valid PromQL selector of a
// series that does not exist, so an alert built on it never fires.
func TestDocumentedMetricsAreServed(t *testing.T) {
	served := servedNames(t)
	for _, n := range metrics.Names() {
		if !served[n] {
			t.Errorf("metrics.Names lists %s, which /metrics does not serve", n)
		}
	}
	// A name in prose (a table of families, "watch X") must be served.
	check := func(where, span string) {
		for _, n := range promNames(span) {
			if strings.HasPrefix(n, "redlockd_") && n != "redlockd_" && !served[n] {
				t.Errorf("%s: %q names %s, which redlockd does not serve", where, span, n)
			}
		}
	}
	exprs := 0
	for f, list := range documentedExprs(t) {
		for _, e := range list {
			exprs++
			if strings.ContainsAny(e, "(<>=+") {
				// An expression: every series it reads must exist.
				for _, n := range promNames(e) {
					if !served[n] {
						t.Errorf("%s: %q reads %s, which redlockd does not serve", f, e, n)
					}
				}
				continue
			}
			check(f, e)
		}
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	data, err := os.ReadFile(filepath.Join("grafana", "redlockd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, n := range promNames(tg.Expr) {
				if !served[n] {
					t.Errorf("dashboard panel %q: %q reads %s, which redlockd does not serve", p.Title, tg.Expr, n)
				}
			}
		}
	}
	if exprs < 10 {
		t.Fatalf("only %d expressions found: the docs or the dashboard moved", exprs)
	}
}

// TestImageRunsAsNumericUser: a kubelet enforcing runAsNonRoot cannot
// check a user name, so the image's USER and the pod's runAsUser are the
// same numbers, and the kustomization can point the image elsewhere.
func TestImageRunsAsNumericUser(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):(\d+)\s*$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("the Dockerfile's USER is not numeric uid:gid")
	}
	var dep, kust map[string]any
	for path, ds := range docs(t) {
		for _, d := range ds {
			switch {
			case d["kind"] == "Deployment" && dig(d, "metadata", "name") == "redlockd":
				dep = d
			case d["kind"] == "Kustomization" && strings.HasPrefix(path, "kubernetes"):
				kust = d
			}
		}
	}
	sc := dig(dep, "spec", "template", "spec", "securityContext")
	for field, want := range map[string]string{"runAsUser": m[1], "runAsGroup": m[2]} {
		if got := dig(sc, field); got == nil || strings.TrimSpace(jsonText(got)) != want {
			t.Errorf("pod securityContext.%s = %v, want the image's %s", field, got, want)
		}
	}
	if dig(sc, "runAsNonRoot") != true {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	image, _ := dig(dep, "spec", "template", "spec", "containers", "0", "image").(string)
	found := false
	for _, im := range asList(dig(kust, "images")) {
		if dig(im, "name") == image && dig(im, "newName") != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("the kustomization has no images: entry for the Deployment's image %q", image)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
