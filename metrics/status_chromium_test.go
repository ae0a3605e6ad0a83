package metrics_test

import (
	"context"
	"html"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

const chromium = "/usr/bin/chromium"

// renderedText loads url in headless Chromium and returns the text a
// person sees: the rendered DOM with its markup taken out.
func renderedText(t *testing.T, url string) string {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s not installed (Debian package chromium; test.sh installs it): %v", chromium, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := childproc.Output(childproc.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url))
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	dom := regexp.MustCompile(`(?s)<style.*?</style>|<title>.*?</title>`).ReplaceAllString(string(out), "")
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(dom, " ")
	return strings.Join(strings.Fields(html.UnescapeString(text)), " ")
}

// TestStatusPageInChromium: a backend restarted empty is quarantined, and
// the status page, rendered by a real browser, says so in that backend's
// row, with the time left and why, while the summary counts its vote out.
func TestStatusPageInChromium(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Quorum: func(c *quorum.Config) { c.RestartQuarantine = time.Hour }})
	if err := in.Client(t, 2).Do(t.Context(), "LOCK", "seen", "60000").Err(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Handler(in.Metrics))
	defer srv.Close()

	before := renderedText(t, srv.URL+"/")
	if !strings.Contains(before, "Locking: 3 of 3 backends vote, quorum 2.") {
		t.Fatalf("before the restart the page reads: %s", before)
	}
	restarted := in.Backends[0]
	restarted.Restart(t)
	deadline := time.Now().Add(30 * time.Second)
	for st := in.Cluster.NodeStates()[0]; !st.Quarantined || !st.Up; st = in.Cluster.NodeStates()[0] {
		if time.Now().After(deadline) {
			t.Fatalf("backend not quarantined after its restart: %+v", in.Cluster.NodeStates()[0])
		}
		time.Sleep(20 * time.Millisecond) // the watcher looks every second
	}
	text := renderedText(t, srv.URL+"/")
	row := regexp.MustCompile(regexp.QuoteMeta(restarted.Addr()) + ` quarantined .*? (59m\d\ds|1h0m0s) restarted \(or started after the others\) and may have lost locks; votes again in (59m\d\ds|1h0m0s)`)
	if !row.MatchString(text) {
		t.Errorf("the page does not show %s as quarantined with its time left and why; it reads:\n%s", restarted.Addr(), text)
	}
	if !strings.Contains(text, "Locking: 2 of 3 backends vote, quorum 2.") {
		t.Errorf("the summary does not count the quarantined vote out:\n%s", text)
	}
	if !strings.Contains(text, "granted 1") || !strings.Contains(text, "Version dev") {
		t.Errorf("locks or version missing:\n%s", text)
	}
}
