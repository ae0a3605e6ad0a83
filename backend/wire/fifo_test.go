package wire

import "testing"

// The queue keeps order across its moves to the front, and a queue that
// is never drained (a loaded line) stops allocating once it has grown.
func TestFifoOrderAndReuse(t *testing.T) {
	reqs := make([]*Request, 64)
	for i := range reqs {
		reqs[i] = &Request{Skip: int16(i)}
	}
	var q fifo
	next, want := 0, 0
	step := func() {
		q.push(reqs[next%64 : next%64+1])
		next++
		q.push(reqs[next%64 : next%64+1])
		next++
		for range 2 {
			if got := int(q.front().Skip); got != want%64 {
				t.Fatalf("front %d, want %d", got, want%64)
			}
			q.pop()
			want++
		}
	}
	q.push(reqs[:1]) // one always left: the queue never drains
	next = 1
	for range 100 {
		step()
	}
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("a loaded queue allocates %.1f times per push and pop", allocs)
	}
	if rest := q.take(); len(rest) != 1 || q.len() != 0 {
		t.Errorf("take: %d left, queue %d", len(rest), q.len())
	}
}
