package e2e

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// readFrame reads one whole RESP2/RESP3 frame and returns its bytes.
func readFrame(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	s, err := frame(r)
	if err != nil {
		t.Fatalf("reading a frame: %v (got %q)", err, s)
	}
	return s
}

func frame(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return line, err
	}
	if len(line) < 3 {
		return line, fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=':
		if n < 0 {
			return line, nil
		}
		b := make([]byte, n+2)
		_, err := io.ReadFull(r, b)
		return line + string(b), err
	case '*', '>', '~':
		return elems(r, line, n)
	case '%':
		return elems(r, line, 2*n)
	}
	return line, nil
}

func elems(r *bufio.Reader, out string, n int) (string, error) {
	for range max(n, 0) {
		s, err := frame(r)
		out += s
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// msg is the RESP2 "message" frame (a ">" push in RESP3).
func msgFrame(prefix, channel, payload string) string {
	return fmt.Sprintf("%s3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", prefix, len(channel), channel, len(payload), payload)
}

// marks publishes a distinct marker on each backend directly and returns
// them. A subscriber that has received all of them has received every
// copy each backend delivered before: each backend's copies reach the
// proxy in order, on one connection, and are queued for the client in
// that order.
func marks(t *testing.T, servers []*redistest.Server, channel string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for i, s := range servers {
		m := fmt.Sprintf("mark-%d-%d", i, time.Now().UnixNano())
		if err := s.Client().Publish(ctxT(t), channel, m).Err(); err != nil {
			t.Fatalf("PUBLISH on backend %d: %v", i, err)
		}
		out[m] = true
	}
	return out
}

// untilMarks reads payloads with next until every marker has arrived,
// and returns the other payloads in the order they came.
func untilMarks(t *testing.T, want map[string]bool, next func() string) []string {
	t.Helper()
	var got []string
	left := len(want)
	for left > 0 {
		p := next()
		pending, ours := want[p]
		switch {
		case ours && pending:
			want[p] = false
			left--
		case ours:
			t.Fatalf("marker %q delivered twice", p)
		case strings.HasPrefix(p, "mark-"):
			// an earlier call's marker, that another subscriber waited for
		default:
			got = append(got, p)
		}
	}
	return got
}
