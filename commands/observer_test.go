package commands

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

type cmdRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *cmdRecorder) CommandDone(cmd, outcome string, _ time.Duration, _ *quorum.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, cmd+"/"+outcome)
}

func (r *cmdRecorder) BackendFields(node string) string { return ",extra=" + node }
func (r *cmdRecorder) InfoSections() []string           { return []string{"locks"} }
func (r *cmdRecorder) WriteInfo(section string, b *strings.Builder) {
	b.WriteString("figure:" + section + "\r\n")
}

func TestObserverOutcomes(t *testing.T) {
	rec := &cmdRecorder{}
	f := newFixture(t, Options{Observer: rec, Info: rec})
	tok := f.lock(t, "k")
	f.do("LOCK", "k", "1000")
	f.do("LOCK", "k", "abc")
	f.do("UNLOCK", "k", tok)
	f.do("SET", "s", "v", "NX", "PX", "1000")
	f.do("NOSUCH")
	want := "lock/acquired lock/contended lock/error unlock/ok set/acquired"
	if got := strings.Join(rec.got, " "); got != want {
		t.Errorf("outcomes = %s, want %s (unknown commands are not counted)", got, want)
	}
	info := f.do("INFO")
	if !strings.Contains(info, "backend0:") || !strings.Contains(info, ",extra=m1\r\n") ||
		!strings.Contains(info, "\r\n# Locks\r\nfigure:locks\r\n") {
		t.Errorf("INFO lacks the InfoSource's figures:\n%s", info)
	}
	if info := f.do("INFO", "server"); strings.Contains(info, "# Locks") {
		t.Errorf("INFO server shows other sections:\n%s", info)
	}
}
