package deploy

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestComposeClusterVariant keeps docker-compose.cluster.yml what its
// header says: three independent Redis Clusters of three masters with a
// replica each, formed by a one-shot job from the nodes' fixed addresses,
// and several redlockd replicas whose --backends name one cluster://
// node per cluster.
func TestComposeClusterVariant(t *testing.T) {
	compose := docs(t)["docker-compose.cluster.yml"]
	if len(compose) != 1 {
		t.Fatalf("docker-compose.cluster.yml: %d documents", len(compose))
	}
	services, _ := compose[0]["services"].(map[string]any)
	subnet, dynamic := clusterNetwork(t, compose[0])
	addrs := map[string]string{} // redis service → its fixed address
	var proxies []string
	for name, s := range services {
		svc, _ := s.(map[string]any)
		switch {
		case strings.HasPrefix(name, "redis-"):
			addrs[name] = checkClusterRedis(t, name, svc, subnet, dynamic)
		case strings.HasPrefix(name, "redlockd-"):
			proxies = append(proxies, name)
			checkClusterBackends(t, name, svc)
		}
	}
	if len(addrs) != 18 || len(proxies) < 2 {
		t.Errorf("%d redis services and redlockd %v; want 3 clusters of 6 and several replicas", len(addrs), proxies)
	}
	seen := map[string]string{}
	for name, a := range addrs {
		if other, dup := seen[a]; dup {
			t.Errorf("%s and %s share the address %s", name, other, a)
		}
		seen[a] = name
	}
	for _, c := range "abc" {
		checkClusterCreate(t, string(c), services, addrs)
	}
}

// clusterNetwork returns the network's subnet and the range from which
// containers without a fixed address get theirs.
func clusterNetwork(t *testing.T, doc map[string]any) (subnet, dynamic netip.Prefix) {
	t.Helper()
	cfg := dig(doc, "networks", "locks", "ipam", "config", "0")
	s, _ := dig(cfg, "subnet").(string)
	r, _ := dig(cfg, "ip_range").(string)
	var err1, err2 error
	subnet, err1 = netip.ParsePrefix(s)
	dynamic, err2 = netip.ParsePrefix(r)
	if err1 != nil || err2 != nil || !subnet.Contains(dynamic.Addr()) {
		t.Fatalf("network locks: subnet %q, ip_range %q; want a range inside the subnet", s, r)
	}
	return subnet, dynamic
}

func checkClusterRedis(t *testing.T, name string, svc map[string]any, subnet, dynamic netip.Prefix) string {
	t.Helper()
	cmd := strings.Join(strs(svc["command"]), " ")
	for _, want := range []string{"--cluster-enabled yes", "--cluster-require-full-coverage no", "noeviction", "--appendonly yes"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("%s: command %q lacks %q", name, cmd, want)
		}
	}
	if strings.Contains(cmd, "replicaof") || strings.Contains(cmd, "slaveof") {
		t.Errorf("%s replicates outside its cluster: %s", name, cmd)
	}
	a, _ := dig(svc, "networks", "locks", "ipv4_address").(string)
	ip, err := netip.ParseAddr(a)
	if err != nil || !subnet.Contains(ip) || dynamic.Contains(ip) {
		t.Errorf("%s: address %q, want a fixed one in %v outside %v", name, a, subnet, dynamic)
	}
	return a
}

// checkClusterCreate: cluster c is formed from exactly its six nodes'
// addresses, with one replica per master, after they are healthy.
func checkClusterCreate(t *testing.T, c string, services map[string]any, addrs map[string]string) {
	t.Helper()
	job, _ := services["cluster-"+c].(map[string]any)
	script := strings.Join(strs(job["command"]), " ")
	var want []string
	for i := 1; i <= 6; i++ {
		node := fmt.Sprintf("redis-%s%d", c, i)
		want = append(want, addrs[node]+":6379")
		if got := dig(job, "depends_on", node, "condition"); got != "service_healthy" {
			t.Errorf("cluster-%s: waits for %s %v, want service_healthy", c, node, got)
		}
	}
	_, create, ok := strings.Cut(script, "--cluster create ")
	if !ok || !strings.HasPrefix(create, strings.Join(want, " ")+" --cluster-replicas 1 --cluster-yes") {
		t.Errorf("cluster-%s: script %q; want --cluster create %v --cluster-replicas 1", c, script, want)
	}
}

// checkClusterBackends: three cluster:// nodes, each seeded only from
// the nodes of one cluster, no cluster twice, and start-up after every
// cluster was formed.
func checkClusterBackends(t *testing.T, who string, svc map[string]any) {
	t.Helper()
	var list string
	for _, a := range strs(svc["command"]) {
		if v, ok := strings.CutPrefix(a, "--backends="); ok {
			list = v
		}
	}
	var clusters []string
	for _, b := range strings.Split(list, ",") {
		u, err := url.Parse(b)
		if err != nil || u.Scheme != "cluster" {
			t.Errorf("%s: backend %q is not a cluster:// URL", who, b)
			continue
		}
		hosts := append([]string{u.Host}, u.Query()["seed"]...)
		c := clusterOf(hosts[0])
		for _, h := range hosts {
			if clusterOf(h) != c || c == "" {
				t.Errorf("%s: backend %q seeds %s outside cluster %q", who, b, h, c)
			}
		}
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	if !slices.Equal(clusters, []string{"a", "b", "c"}) {
		t.Errorf("%s: --backends %q names clusters %v, want a, b and c once each", who, list, clusters)
	}
	for _, c := range []string{"a", "b", "c"} {
		if got := dig(svc, "depends_on", "cluster-"+c, "condition"); got != "service_completed_successfully" {
			t.Errorf("%s: waits for cluster-%s %v, want service_completed_successfully", who, c, got)
		}
	}
}

// clusterOf names the cluster of a seed redis-<c><i>:6379, or "".
func clusterOf(hostport string) string {
	name, ok := strings.CutSuffix(hostport, ":6379")
	if !ok || len(name) != len("redis-a1") || !strings.HasPrefix(name, "redis-") {
		return ""
	}
	return name[len("redis-") : len("redis-")+1]
}
