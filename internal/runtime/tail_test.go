package runtime

import "testing"

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"fits", []string{"ab", "cd"}, "abcd"},
		{"rolls over", []string{"abcdef", "gh"}, "cdefgh"},
		{"one big write", []string{"0123456789"}, "456789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewTailBuffer(6)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		max  int
		want string
	}{
		{"a\nb\n\nc\n", 2, 100, "b | c"},
		{"only", 3, 100, "only"},
		{"", 3, 100, ""},
		{"x\n0123456789", 1, 7, "…6789"}, // the ellipsis counts
		{"boom\x1b]0;title\x07\n\x1b[2J", 2, 100, `boom\x1b]0;title\x07 | \x1b[2J`},
	}
	for _, tt := range tests {
		if got := LastLines(tt.in, tt.n, tt.max); got != tt.want {
			t.Errorf("LastLines(%q, %d, %d) = %q, want %q", tt.in, tt.n, tt.max, got, tt.want)
		}
	}
}
