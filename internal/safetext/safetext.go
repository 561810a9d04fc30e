// Package safetext makes text that came from a sandbox (its stderr, the
// agent's answers) safe to put where it is not the sandbox's output itself:
// stop reasons, error messages, log fields and the CLI's tables. Control
// and format characters (terminal escapes, bidi overrides, newlines) and
// invalid UTF-8 are escaped Go-style, never interpreted, and lengths are
// clipped.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLine is the usual bound of one line of untrusted text in a message.
const MaxLine = 512

// ellipsis marks text that was clipped.
const ellipsis = "…"

// Escape returns s with every control character (C0, DEL, C1), format
// character (Cf: bidi overrides, zero-width marks), line or paragraph
// separator and invalid UTF-8 byte written as a Go escape (\x1b, \n,
// \u202e). Everything else, backslashes included, is kept, so Escape of
// escaped text changes nothing.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line returns Escape(s) cut to at most max bytes (ending in "…" when
// cut), for one line of a message.
func Line(s string, max int) string {
	return Clip(Escape(s), max)
}

// Tail returns the end of Escape(s), at most max bytes, starting with "…"
// when cut: for logs and stderr, whose last words matter most.
func Tail(s string, max int) string {
	s = Escape(s)
	if len(s) <= max {
		return s
	}
	n := len(s) - max + len(ellipsis)
	for n < len(s) && !utf8.RuneStart(s[n]) {
		n++
	}
	return ellipsis + s[min(n, len(s)):]
}

// Clip cuts s to at most max bytes, on a rune boundary, ending in "…"
// when it cut anything. A max below the ellipsis' length returns "…".
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(ellipsis)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// Safe reports whether s can reach a terminal or log as is: valid UTF-8
// without control, format or separator characters.
func Safe(s string) bool { return !needsEscape(s) }

// needsEscape reports whether s has anything Escape would change.
func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports whether r must not reach a terminal or log as is.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapeRune is r as a Go escape, without quotes.
func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
