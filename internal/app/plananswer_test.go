package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParsePlanAnswer(t *testing.T) {
	t.Parallel()
	assert.Equal(t, false, ParsePlanAnswer("").Reject)
	assert.Empty(t, ParsePlanAnswer("yes").Steps)
	r := ParsePlanAnswer("no: too risky")
	assert.True(t, r.Reject)
	assert.Equal(t, "too risky", r.Reason)
	assert.True(t, ParsePlanAnswer("N").Reject)
	assert.Equal(t, []string{"[researcher] A", "[agent] B"}, ParsePlanAnswer(" [researcher] A ; [agent] B ;").Steps)
	assert.Equal(t, []string{"Nothing else"}, ParsePlanAnswer("Nothing else").Steps)
}
