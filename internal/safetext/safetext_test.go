package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\nb\r\tc\x00\x7f", `a\nb\r\tc\x00\x7f`},
		{"\u009b2J", `\x9b2J`},                     // C1 CSI
		{"evil\u202etxt.exe", `evil\u202etxt.exe`}, // bidi override
		{"bad\xff\xfebytes", `bad\xff\xfebytes`},
		{"line\u2028sep", `line\u2028sep`},
		{`already \x1b escaped`, `already \x1b escaped`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Escape(Escape(tc.in)); got != tc.want {
			t.Errorf("Escape is not idempotent on %q: %q", tc.in, got)
		}
	}
}

func TestLine(t *testing.T) {
	huge := strings.Repeat("\x1b]0;pwned\x07ä", 100000)
	got := Line(huge, 300)
	if len(got) > 300 {
		t.Fatalf("Line kept %d bytes, want at most 300", len(got))
	}
	if !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("Line(huge) = %q: want valid UTF-8 ending in …", got)
	}
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Fatalf("Line(huge) kept control characters: %q", got)
	}
	if got := Line("short", 300); got != "short" {
		t.Fatalf("Line(short) = %q", got)
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"first line\nlast \x1b[2Jline", 15, `… \x1b[2Jline`},
		{"ääää", 7, "…ää"}, // never splits a rune
	} {
		got := Tail(tc.in, tc.max)
		if got != tc.want || len(got) > tc.max {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello world", 8, "hello…"},
		{"ääää", 6, "ä…"}, // never splits a rune
		{"hello", 1, "…"},
	} {
		if got := Clip(tc.in, tc.max); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
