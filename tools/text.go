package tools

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// truncateText cuts s to at most max bytes (on a rune boundary) and says how
// much was cut. max <= 0 means no limit.
func truncateText(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := runeBoundary(s, max)
	return fmt.Sprintf("%s\n… [truncated: %d more bytes]", s[:cut], len(s)-cut)
}

// runeBoundary returns the largest i <= n with s[:i] ending on a rune
// boundary.
func runeBoundary(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// cleanText makes untrusted text safe to show: invalid UTF-8 becomes U+FFFD
// and control characters other than newline and tab are dropped (they can
// hide text from a human reviewing the transcript, or corrupt a terminal).
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, isUnwantedControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isUnwantedControl(r) {
			return -1
		}
		return r
	}, s)
}

func isUnwantedControl(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		(r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') // bidi overrides
}

// oneLine cleans s and folds all whitespace runs into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(cleanText(s)), " ")
}
