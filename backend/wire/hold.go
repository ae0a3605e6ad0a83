package wire

// Hold holds back the writes of every line until Release: what is
// submitted meanwhile leaves in one write per connection.
func (m *Mux) Hold() {
	for _, l := range m.lines {
		l.mu.Lock()
		l.held++
		l.mu.Unlock()
	}
}

// Release wakes the writer of every line with work queued, even while
// another caller still holds it: a hold never keeps a command waiting
// for longer than its own caller's batch takes to start.
func (m *Mux) Release() {
	for _, l := range m.lines {
		l.mu.Lock()
		l.held--
		wake := len(l.queue) > 0
		l.mu.Unlock()
		if wake {
			poke(l.wake)
		}
	}
}
