package citation

import (
	"strconv"
	"strings"
	"testing"
)

// bracketHeavy are texts that a parser looking ahead from every bracket
// scans quadratically: nested brackets, unclosed links with nested
// parentheses, and links whose destination never ends.
var bracketHeavy = []struct{ name, unit string }{
	{"nested brackets", "[[[[((("},
	{"open brackets", "["},
	{"unclosed destinations", "[a]((("},
	{"destination without end", "[x](y"},
	{"images", "![a]("},
	{"label groups", "[S1]("},
	{"code spans", "`` ` [a](b `"},
}

// repeatTo repeats unit to n bytes, closing the brackets when the unit is
// a lone "[" (so that every bracket has a partner far away).
func repeatTo(unit string, n int) string {
	if unit == "[" {
		return strings.Repeat("[", n/2) + strings.Repeat("]", n/2)
	}
	return strings.Repeat(unit, n/len(unit))
}

// TestFinalizeBracketHeavyGuard is a guard, not a timing: at 1 MB, each of
// these took many minutes with the quadratic parser (200 KB took a minute), so
// the test would hit go test's default timeout. Linear work finishes in
// well under a second. BenchmarkFinalizeBracketHeavy measures it.
func TestFinalizeBracketHeavyGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("1 MB inputs")
	}
	gathered := []Source{src("a", 1, 8, urlA)}
	for _, tt := range bracketHeavy {
		t.Run(tt.name, func(t *testing.T) {
			in := repeatTo(tt.unit, 1<<20)
			Finalize(in, gathered)
			FromLabels(in, gathered)
		})
	}
}

// BenchmarkFinalizeBracketHeavy runs 200 KB and 800 KB of each shape: the
// throughput (MB/s) of the two sizes should be about the same.
func BenchmarkFinalizeBracketHeavy(b *testing.B) {
	gathered := []Source{src("a", 1, 8, urlA)}
	for _, tt := range bracketHeavy {
		for _, kb := range []int{200, 800} {
			in := repeatTo(tt.unit, kb<<10)
			b.Run(tt.name+"/"+strconv.Itoa(kb)+"KB", func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					Finalize(in, gathered)
				}
			})
		}
	}
}
