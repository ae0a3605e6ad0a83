package quorum

import "testing"

func pending(w *waiter) bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

func TestWakeRegistry(t *testing.T) {
	tests := []struct {
		name string
		run  func(r *wakeRegistry, w1, w2 *waiter)
		// want1, want2: whether each waiter holds a wake at the end.
		want1, want2 bool
	}{
		{"oldest first", func(r *wakeRegistry, _, _ *waiter) { r.notify(0, "k") }, true, false},
		{"wakes coalesce", func(r *wakeRegistry, _, _ *waiter) { r.notify(0, "k"); r.notify(0, "k") }, true, false},
		{"other key", func(r *wakeRegistry, _, _ *waiter) { r.notify(0, "x") }, false, false},
		{"same key, other db", func(r *wakeRegistry, _, _ *waiter) { r.notify(2, "k") }, false, false},
		{"giving up passes the wake on", func(r *wakeRegistry, w1, _ *waiter) {
			r.notify(0, "k")
			r.leave(w1, false)
		}, false, true},
		{"acquiring drops the wake", func(r *wakeRegistry, w1, _ *waiter) {
			r.notify(0, "k")
			r.leave(w1, true)
		}, false, false},
		{"giving up without a wake passes nothing", func(r *wakeRegistry, w1, _ *waiter) {
			r.leave(w1, false)
		}, false, false},
		{"next release goes to the next in line", func(r *wakeRegistry, w1, _ *waiter) {
			r.leave(w1, true)
			r.notify(0, "k")
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newWakeRegistry()
			w1, w2 := r.join(0, "k"), r.join(0, "k")
			tt.run(r, w1, w2)
			if got := pending(w1); got != tt.want1 {
				t.Errorf("first waiter woken = %v, want %v", got, tt.want1)
			}
			if got := pending(w2); got != tt.want2 {
				t.Errorf("second waiter woken = %v, want %v", got, tt.want2)
			}
		})
	}
}

func TestWakeRegistryForgetsKeys(t *testing.T) {
	r := newWakeRegistry()
	w1, w2 := r.join(0, "k"), r.join(0, "k")
	if n := r.count(0, "k"); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	r.leave(w2, false)
	r.leave(w1, false)
	if n := len(r.keys); n != 0 {
		t.Errorf("%d keys left in the registry after every waiter left", n)
	}
}
