package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
