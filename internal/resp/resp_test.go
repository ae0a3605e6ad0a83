package resp

import "testing"

func TestAppendCommand(t *testing.T) {
	const want = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if got := string(AppendCommand(nil, []string{"SET", "k", ""})); got != want {
		t.Fatalf("strings: %q, want %q", got, want)
	}
	if got := string(AppendCommand([]byte("x"), [][]byte{[]byte("SET"), []byte("k"), {}})); got != "x"+want {
		t.Fatalf("bytes: %q, want %q", got, "x"+want)
	}
}
