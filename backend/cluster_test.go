package backend

import (
	"testing"
)

func TestParseClusterAddr(t *testing.T) {
	tests := []struct {
		addr  string
		seeds []string
		tls   bool
		user  string
		bad   bool
	}{
		{addr: "cluster://h1:7000", seeds: []string{"h1:7000"}},
		{addr: "cluster://u:pw@h1:7000?seed=h2:7001&seed=h3:7002", seeds: []string{"h1:7000", "h2:7001", "h3:7002"}, user: "u"},
		{addr: "clusters://h1:7000", seeds: []string{"h1:7000"}, tls: true},
		{addr: "cluster://h1:7000/2", bad: true},
		{addr: "cluster://h1:7000?db=2", bad: true},
		{addr: "cluster://h1:7000?seed=nohost", bad: true},
		{addr: "cluster://h1", seeds: []string{"h1:6379"}}, // the port defaults as in redis://
	}
	for _, tt := range tests {
		o, seeds, err := parseClusterAddr(tt.addr, nil)
		if tt.bad {
			if err == nil {
				t.Errorf("%s: no error", tt.addr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.addr, err)
		}
		if len(seeds) != len(tt.seeds) || seeds[0] != tt.seeds[0] || seeds[len(seeds)-1] != tt.seeds[len(tt.seeds)-1] {
			t.Errorf("%s: seeds %v, want %v", tt.addr, seeds, tt.seeds)
		}
		if (o.TLSConfig != nil) != tt.tls || o.Username != tt.user {
			t.Errorf("%s: TLS %v user %q", tt.addr, o.TLSConfig != nil, o.Username)
		}
	}
}

func TestParseNodes(t *testing.T) {
	text := "id1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-id2]\n" +
		"id2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922 12000\n" +
		"id3 :7002@17002 slave id1 0 0 1 connected\n"
	ranges, err := parseNodes(text, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 3 {
		t.Fatalf("ranges %+v, want 3", ranges)
	}
	if r := ranges[0]; r.start != 0 || r.end != 5460 || r.addr != "127.0.0.1:7000" || len(r.replicas) != 1 || r.replicas[0] != "id3" {
		t.Fatalf("first range %+v", r)
	}
	if r := ranges[2]; r.start != 12000 || r.end != 12000 || r.id != "id2" {
		t.Fatalf("single slot %+v", r)
	}
	if _, err := parseNodes("id1 127.0.0.1:7000@17000 master - 0 0 1 connected\n", "h"); err == nil {
		t.Fatal("a topology without slots was accepted")
	}
}
