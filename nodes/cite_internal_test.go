package nodes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/research/citation"
)

// Only the label syntax the model is told to write counts as a citation:
// [S3], [S1, S3], 【S3】. "(S9)" and "S9" in prose are words.
func TestInventedLabelsCountsOnlyCitations(t *testing.T) {
	for text, want := range map[string]int{
		"a made-up label [S9]":                  1,
		"a list [S1, S9; S7] with two":          2,
		"full-width 【S9】 and 【 s8 】":            2,
		"the Galaxy (S9) and the S9 phone":      0,
		"Samsung, S9 and S10 are models":        0,
		"fine [S1] [S3]":                        0,
		"in code `[S9]` and after [S2]":         0,
		"a bracket [see S9] is prose":           0,
		"[S1, S2] then (S4, S9) in parentheses": 0,
	} {
		assert.Equal(t, want, inventedLabels(text, 3), "%q", text)
	}
}

func TestNormalizeCitationsResolvesOtherSchemes(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		dropped  int
	}{
		{"Go 1.22 fixed loops [1].", "Go 1.22 fixed loops [S1].", 0},
		{"Both agree [1, 3].", "Both agree [S1, S3].", 0},
		{"A footnote[^2] here.", "A footnote[S2] here.", 0},
		{"As stated [source 3].", "As stated [S3].", 0},
		{"As stated (S3) and (S1, S2).", "As stated [S3] and [S1, S2].", 0},
		{"An index x[1] and a link [1](https://a.example) stay.", "An index x[1] and a link [1](https://a.example) stay.", 0},
		{"The Galaxy (S9) is a phone.", "The Galaxy (S9) is a phone.", 0},
		{"In code `[1]` nothing changes.", "In code `[1]` nothing changes.", 0},
		{"Made up [7].", "Made up.", 1},
		{"See sources [7] and [8] and [9].", "See sources.", 3},
		{"See [7], [8], [9], and more.", "See, and more.", 3},
		{"Known [2] and unknown [8] and more [9] facts.", "Known [S2] and unknown and more facts.", 2},
		{"One [1, 9] half-known.", "One [S1] half-known.", 1},
		{"Note[^1].\n\n[^1]: https://a.example/page", "Note[S1].", 0},
		{"Body [1].\n\n## Sources\n1. [A](https://a.example)\n[9] https://b.example", "Body [S1].\n\n## Sources\n1. [A](https://a.example)\n[9] https://b.example", 0},
		{"## Sources of error\nThe sensor drifts [1].", "## Sources of error\nThe sensor drifts [S1].", 0},
	} {
		got, dropped := normalizeCitations(tc.in, 3)
		assert.Equal(t, tc.want, strings.TrimRight(got, "\n"), "%q", tc.in)
		assert.Equal(t, tc.dropped, dropped, "%q", tc.in)
	}
}

func TestCiteAnswerOneScheme(t *testing.T) {
	gathered := []citation.Source{
		citation.ForResult("A", "https://a.example/", 0, 1),
		citation.ForResult("B", "https://b.example/", 0, 2),
	}
	text, cited, dropped := citeAnswer("A says x [1]; B says y [S2] and z [9].\n\n## Sources\n1. https://zzz.example", gathered)
	assert.Equal(t, 2, dropped, "the bare [9] and the model's list entry name nothing gathered")
	require.Len(t, cited, 2)
	assert.NotContains(t, text, "zzz.example", "the model's own list is gone")
	assert.Equal(t, 1, strings.Count(text, "## Sources"), "one Sources list: the real one")
	assert.NotContains(t, text, "[9]")
	assert.NotContains(t, text, " and .")
	assert.Contains(t, text, "https://a.example/")
}
