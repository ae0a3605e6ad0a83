package backend

// Hold holds back the writes of database 0's connections until Release
// (quorum.WriteHolder): the commands of rounds started meanwhile leave in one
// write per connection. Other databases' lines write as they always do.
func (r *Redis) Hold() { r.mux.hold() }

// Release writes what was queued while held.
func (r *Redis) Release() { r.mux.release() }

func (m *mux) hold() {
	for _, l := range m.lines {
		l.mu.Lock()
		l.held++
		l.mu.Unlock()
	}
}

// release wakes the writer of every line with work queued, even while
// another caller still holds it: a hold never keeps a command waiting
// for longer than its own caller's batch takes to start.
func (m *mux) release() {
	for _, l := range m.lines {
		l.mu.Lock()
		l.held--
		wake := len(l.queue) > 0
		l.mu.Unlock()
		if wake {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}
