package check

import (
	"testing"
	"time"
)

func TestCrowds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(key, client, kind string, from, to int) Section {
		return Section{Key: key, Client: client, Kind: kind,
			Start: t0.Add(time.Duration(from) * time.Millisecond), End: t0.Add(time.Duration(to) * time.Millisecond)}
	}
	limits := map[string]int{"sem": 2}
	limit := func(k string) int { return limits[k] }
	tests := []struct {
		name string
		in   []Section
		want []string // clients of the reported sections, in order
	}{
		{"readers share", []Section{at("k", "r1", Shared, 0, 10), at("k", "r2", Shared, 5, 15), at("k", "r3", Shared, 6, 7)}, nil},
		{"writer after readers", []Section{at("k", "r1", Shared, 0, 10), at("k", "w", Exclusive, 10, 20)}, nil},
		{"writer among readers", []Section{at("k", "r1", Shared, 0, 10), at("k", "w", Exclusive, 9, 20)}, []string{"w"}},
		{"reader beside writer", []Section{at("k", "w", Exclusive, 0, 10), at("k", "r", Shared, 3, 4)}, []string{"r"}},
		{"two writers", []Section{at("k", "a", Exclusive, 0, 10), at("k", "b", Exclusive, 3, 4)}, []string{"b"}},
		{"other keys apart", []Section{at("k", "a", Exclusive, 0, 10), at("j", "b", Exclusive, 3, 4)}, nil},
		{"empty section", []Section{at("k", "a", Exclusive, 0, 10), at("k", "b", Exclusive, 3, 3)}, nil},
		{"two permits of two", []Section{at("sem", "a", Exclusive, 0, 10), at("sem", "b", Exclusive, 1, 10)}, nil},
		// The majority-of-counts counter-example: A, B and C each hold a
		// 2-permit semaphore on a majority of 3 nodes, all at once.
		{"three of two permits", []Section{at("sem", "A", Exclusive, 0, 10), at("sem", "B", Exclusive, 1, 10), at("sem", "C", Exclusive, 2, 10)}, []string{"C"}},
		{"permit freed in time", []Section{at("sem", "A", Exclusive, 0, 2), at("sem", "B", Exclusive, 1, 10), at("sem", "C", Exclusive, 2, 10)}, nil},
	}
	for _, tt := range tests {
		got := Crowds(tt.in, limit)
		var clients []string
		for _, c := range got {
			clients = append(clients, c.Section.Client)
			if c.String() == "" {
				t.Errorf("%s: empty description", tt.name)
			}
		}
		if len(clients) != len(tt.want) {
			t.Errorf("%s: reported %v, want %v", tt.name, clients, tt.want)
			continue
		}
		for i := range clients {
			if clients[i] != tt.want[i] {
				t.Errorf("%s: reported %v, want %v", tt.name, clients, tt.want)
			}
		}
	}
}

func TestRecorderKeepsKind(t *testing.T) {
	r := NewRecorder()
	now := time.Now()
	r.BeginKind("r1", "k", Shared, now, now, time.Hour).EndAt(now.Add(time.Second))
	r.BeginKind("r2", "k", Shared, now, now.Add(time.Millisecond), time.Hour).EndAt(now.Add(time.Second))
	r.Begin("w", "k", now, now.Add(2*time.Millisecond), time.Hour).EndAt(now.Add(time.Second))
	got := Crowds(r.Sections(), nil)
	if len(got) != 1 || got[0].Section.Client != "w" || len(got[0].Others) != 2 {
		t.Fatalf("Crowds = %v, want only w among the two readers", got)
	}
}
