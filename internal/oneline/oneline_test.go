package oneline

import "testing"

func TestOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain  two spaces", "plain  two spaces"},
		{"a\r\nb", "a  b"},
		{"yaml: errors:\n  line 3: x\n", "yaml: errors:   line 3: x "},
		{"\r", " "},
	}
	for _, tc := range tests {
		if got := Of(tc.in); got != tc.want {
			t.Errorf("Of(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
