// Package deploy holds the container and cluster manifests; nothing here
// can run Docker or Kubernetes, so this test keeps them parseable and
// checks the facts they must agree on with the code.
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/redlockd/redlockd/metrics"
)

// docs reads every YAML document under the deploy folder, by file.
func docs(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", path, err)
				break
			}
			if doc != nil {
				out[path] = append(out[path], doc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestComposeHasFiveRedisAndTwoRedlockd(t *testing.T) {
	compose := docs(t)["docker-compose.yml"]
	if len(compose) != 1 {
		t.Fatalf("docker-compose.yml: %d documents", len(compose))
	}
	services := compose[0]["services"].(map[string]any)
	var redis, proxies []string
	for name, s := range services {
		svc := s.(map[string]any)
		switch {
		case strings.HasPrefix(name, "redis-"):
			redis = append(redis, name)
			cmd := strings.Join(strs(svc["command"]), " ")
			if strings.Contains(cmd, "replicaof") || strings.Contains(cmd, "slaveof") {
				t.Errorf("%s replicates: %s", name, cmd)
			}
			if !strings.Contains(cmd, "noeviction") {
				t.Errorf("%s may evict keys (= release locks): %s", name, cmd)
			}
		case strings.HasPrefix(name, "redlockd-"):
			proxies = append(proxies, name)
			checkBackendsFlag(t, name, strs(svc["command"]), 5, func(i int) string { return redisName(i) })
		}
	}
	if len(redis) != 5 || len(proxies) != 2 {
		t.Errorf("compose has redis %v and redlockd %v, want 5 and 2", redis, proxies)
	}
}

func redisName(i int) string { return "redis-" + string(rune('1'+i)) + ":6379" }

// checkBackendsFlag asserts that args carry --backends naming all n nodes.
func checkBackendsFlag(t *testing.T, who string, args []string, n int, name func(int) string) {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--backends="); ok {
			got := strings.Split(v, ",")
			var want []string
			for i := 0; i < n; i++ {
				want = append(want, name(i))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: --backends %v, want %v", who, got, want)
			}
			return
		}
	}
	t.Errorf("%s: no --backends in %v", who, args)
}

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// dig follows a path of map keys and list indexes ("0") through a document.
func dig(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := int(p[0] - '0')
			if len(p) != 1 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestKubernetesManifests(t *testing.T) {
	kinds := map[string]map[string]any{}
	for path, ds := range docs(t) {
		if !strings.HasPrefix(path, "kubernetes"+string(filepath.Separator)) {
			continue
		}
		for _, d := range ds {
			kind, _ := d["kind"].(string)
			api, _ := d["apiVersion"].(string)
			name, _ := dig(d, "metadata", "name").(string)
			if kind == "" || api == "" {
				t.Errorf("%s: a document without kind or apiVersion", path)
				continue
			}
			if kind != "Kustomization" && name == "" {
				t.Errorf("%s: %s without metadata.name", path, kind)
			}
			kinds[kind+"/"+name] = d
		}
	}
	for _, want := range []string{"StatefulSet/redis", "Service/redis", "PodDisruptionBudget/redis",
		"Deployment/redlockd", "Service/redlockd", "PodDisruptionBudget/redlockd"} {
		if kinds[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	if sts := kinds["StatefulSet/redis"]; sts != nil {
		if r, _ := dig(sts, "spec", "replicas").(int); r != 5 {
			t.Errorf("redis StatefulSet replicas = %v, want 5", r)
		}
		args := strings.Join(strs(dig(sts, "spec", "template", "spec", "containers", "0", "args")), " ")
		if strings.Contains(args, "replicaof") || !strings.Contains(args, "noeviction") {
			t.Errorf("redis args %q: want no replication and noeviction", args)
		}
	}
	dep := kinds["Deployment/redlockd"]
	if dep == nil {
		return
	}
	if r, _ := dig(dep, "spec", "replicas").(int); r < 2 {
		t.Errorf("redlockd replicas = %v, want several", r)
	}
	c := dig(dep, "spec", "template", "spec", "containers", "0")
	checkBackendsFlag(t, "redlockd Deployment", strs(dig(c, "args")), 5,
		func(i int) string { return "redis-" + string(rune('0'+i)) + ".redis:6379" })
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := dig(c, probe, "httpGet", "path"); got != path {
			t.Errorf("redlockd %s path = %v, want %s", probe, got, path)
		}
		if got := dig(c, probe, "httpGet", "port"); got != "metrics" {
			t.Errorf("redlockd %s port = %v, want the metrics port", probe, got)
		}
	}
}

// TestDashboardUsesRegisteredMetrics keeps the dashboard in step with the
// metrics package: every redlockd_ series a query names must be served.
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("grafana", "redlockd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("redlockd.json: %v", err)
	}
	known := map[string]bool{}
	for _, n := range metrics.Names() {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[n+suffix] = true
		}
	}
	names := regexp.MustCompile(`redlockd_[a-z_]+`)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, n := range names.FindAllString(tg.Expr, -1) {
				if !known[n] {
					t.Errorf("panel %q queries %s, which metrics does not register", p.Title, n)
				}
			}
		}
	}
	if queries == 0 {
		t.Error("dashboard has no queries")
	}
}

// TestEveryJSONParses covers JSON files added later.
func TestEveryJSONParses(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			t.Errorf("%s is not valid JSON", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
