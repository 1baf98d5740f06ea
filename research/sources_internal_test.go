package research

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCutTextKeepsLabelsWhole(t *testing.T) {
	for _, c := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"inside a label", "aaaa bbbb cccc dddd eeee ffff [S12] gggg hhhh iiii", 33 + len(truncated), "aaaa bbbb cccc dddd eeee ffff" + truncated},
		{"inside a link's URL", "aaaa bbbb cccc dddd eeee [ref](https://x.example/long/path) tail tail tail", 50 + len(truncated), "aaaa bbbb cccc dddd eeee" + truncated},
		{"between a link's text and URL", "aaaa bbbb cccc dddd eeee [ref](https://x.example/) tail tail", 30 + len(truncated), "aaaa bbbb cccc dddd eeee" + truncated},
		{"after a whole label", "aaaa bbbb cccc dddd [S1] eeee ffff gggg hhhh iiii jjjj", 30 + len(truncated), "aaaa bbbb cccc dddd [S1] eeee" + truncated},
		{"at a sentence end", "One sentence here. Two sentence there and on and on", 21 + len(truncated), "One sentence here." + truncated},
		{"fits", "short", 5, "short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := cutText(c.s, c.n)
			assert.Equal(t, c.want, got)
			assert.LessOrEqual(t, len(got), max(c.n, len(truncated)))
		})
	}
}

func TestCutTextNeverSplitsACharacter(t *testing.T) {
	s := strings.Repeat("é", 100) // 2 bytes each
	for n := len(truncated); n < len(s); n++ {
		got := cutText(s, n)
		assert.True(t, utf8.ValidString(got), "n=%d", n)
		assert.LessOrEqual(t, len(got), n)
	}
}

func TestFitSourcesSharesFairly(t *testing.T) {
	long := strings.Repeat("word ", 400) // 2000 bytes
	texts := []string{long, "short one", long, "", long + long}
	got := fitSources(texts, 3000)
	total := 0
	for _, g := range got {
		total += len(g)
	}
	assert.LessOrEqual(t, total, 3000)
	assert.Equal(t, "short one", got[1])
	assert.Empty(t, got[3])
	for _, i := range []int{0, 2, 4} {
		assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(got[i], truncated)), "a cut text keeps its start")
		assert.InDelta(t, 997, len(got[i]), 10, "the long texts share what the short ones leave")
	}
	assert.Equal(t, texts, fitSources(texts, 100_000), "texts that fit are untouched")
}
