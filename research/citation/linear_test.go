package citation

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	if testing.Short() || raceDetector {
		t.Skip("1 MB inputs: not in -short, nor under -race (which makes them take minutes and finds nothing here: no goroutines)")
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

// adversarial are the inputs of issue 23 that were quadratic (N8: one
// reference label defined many times and used as often; N9: short-URL host
// paths that the fallback removes) and those that make goldmark, which the
// guard runs, quadratic: the guard bounds what it gives goldmark.
var adversarial = []struct {
	name string
	make func(n int) string
}{
	{"N8 one label defined many times", func(n int) string {
		k := n / 40
		return strings.Repeat("[x][a] ", k) + "\n\n" + strings.Repeat("[a]: https://evil.example/\n", k)
	}},
	{"N9 host paths", func(n int) string {
		return strings.Repeat("vertexaisearch.cloud.google.com/id/ [a](", n/41)
	}},
	{"unclosed links", func(n int) string { return strings.Repeat("[x](y", n/5) }},
	{"unclosed images", func(n int) string { return strings.Repeat("![a](", n/5) }},
	{"nested quotes", func(n int) string { return strings.Repeat("> ", n/2) }},
	{"nested lists", func(n int) string { return strings.Repeat("1. ", n/3) }},
	{"intraword emphasis", func(n int) string { return strings.Repeat("a_b_ ", n/5) }},
	{"paragraphs of links", func(n int) string {
		return strings.Repeat("[x](https://evil.example/) [y](https:evil.example) www.evil.example\n\n", n/70)
	}},
	{"bare URLs with parentheses", func(n int) string { return strings.Repeat("https://e.example/(((a) ", n/24) }},
}

// TestFinalizeAdversarialGuard runs Finalize on 1 MB of each adversarial
// shape: quadratic work would take minutes (N8 took 117 s) and hit go
// test's timeout; BenchmarkFinalizeGrowth measures the time.
func TestFinalizeAdversarialGuard(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("1 MB inputs: not in -short, nor under -race (which makes them take minutes and finds nothing here: no goroutines)")
	}
	gathered := []Source{src("a", 1, 8, urlA)}
	for _, tt := range adversarial {
		t.Run(tt.name, func(t *testing.T) {
			res := Finalize(tt.make(1<<20), gathered)
			if got := checkRendered(res.Text, newIndex(gathered)); len(got) > 0 {
				t.Errorf("foreign links: %q", got[:min(3, len(got))])
			}
		})
	}
}

// BenchmarkFinalizeGrowth times Finalize on each adversarial shape at
// 100 KB and 1 MB in every iteration and reports the ratio of the two
// times ("growth": 10 for linear work, 100 for quadratic) and the time of
// the 1 MB input ("ms/MB"), in CPU time: the process's, so that the rest
// of a busy machine does not count (GC included; run with -cpu 1).
func BenchmarkFinalizeGrowth(b *testing.B) {
	gathered := []Source{src("a", 1, 8, urlA)}
	for _, tt := range adversarial {
		small, large := tt.make(100<<10), tt.make(1<<20)
		b.Run(tt.name, func(b *testing.B) {
			var ts, tl time.Duration
			for b.Loop() {
				start := cpuTime()
				Finalize(small, gathered)
				ts += cpuTime() - start
				start = cpuTime()
				Finalize(large, gathered)
				tl += cpuTime() - start
			}
			b.ReportMetric(float64(tl)/float64(ts), "growth")
			b.ReportMetric(float64(tl.Milliseconds())/float64(b.N), "ms/MB")
		})
	}
}

// BenchmarkDefangGrowth is N9 alone: the fallback's removal of short-URL
// host paths, at n and 10n.
func BenchmarkDefangGrowth(b *testing.B) {
	ix := newIndex([]Source{src("a", 1, 8, urlA)})
	unit := "vertexaisearch.cloud.google.com/id/ "
	small, large := strings.Repeat(unit, 35<<10/len(unit)), strings.Repeat(unit, 350<<10/len(unit))
	var ts, tl time.Duration
	for b.Loop() {
		start := cpuTime()
		defang(small, ix)
		ts += cpuTime() - start
		start = cpuTime()
		defang(large, ix)
		tl += cpuTime() - start
	}
	b.ReportMetric(float64(tl)/float64(ts), "growth")
}

// TestBudgetLeavesAnswersAlone: the guard's budget makes inert only text
// built to be pathological; a long answer — a big table, a long list of
// cited items, many paragraphs with emphasis and links — is read by
// goldmark as it is.
func TestBudgetLeavesAnswersAlone(t *testing.T) {
	ix := newIndex([]Source{src("a", 1, 8, urlA)})
	var b strings.Builder
	b.WriteString("| Country | Wins | Notes |\n|---|---:|---|\n")
	for i := range 300 {
		b.WriteString("| Spain " + strconv.Itoa(i) + " | 4 | *won* in 2024, see [1](" + urlA + ") |\n")
	}
	b.WriteString("\n")
	for i := range 300 {
		b.WriteString("- Item " + strconv.Itoa(i) + ": **bold** claim (with an aside) [1](" + urlA + "), and _more_.\n")
	}
	b.WriteString("\n")
	for range 200 {
		b.WriteString("A paragraph with **strong**, *em*, `code`, a [link text](https://x.example/) and (parentheses), twice: **strong**, *em*, `code`.\n\n")
	}
	in := b.String()
	out, n := budget(in, ix)
	assert.Zero(t, n)
	assert.Equal(t, in, out)
	// Text built of openers is made inert.
	_, n = budget(strings.Repeat("[x](y", 20000), ix)
	assert.Equal(t, 1, n)
	_, n = budget(strings.Repeat("1. ", 20000), ix)
	assert.Equal(t, 1, n)
}
