package research

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/llm"
)

func TestFit(t *testing.T) {
	fs := []Finding{{ID: 0, Summary: strings.Repeat("a", 100)}, {ID: 1, Summary: strings.Repeat("b", 100)}, {ID: 2, Summary: strings.Repeat("c", 100)}}
	notes := map[int]string{0: "note a", 1: "note b", 2: "note c"}

	all := fit(fs, notes, 300)
	assert.Equal(t, []string{fs[0].Summary, fs[1].Summary, fs[2].Summary}, all.text, "everything fits: all in full")

	// 150: every note (18), then the newest in full (+94), not the next (+94).
	mid := fit(fs, notes, 150)
	assert.Equal(t, []string{"note a", "note b", fs[2].Summary}, mid.text)
	assert.Equal(t, []bool{true, true, false}, mid.condensed)
	assert.Equal(t, "(condensed) note a|(condensed) note b|"+fs[2].Summary, mid.render("|"))

	// 12: only the two newest notes; the oldest is left out and said so.
	tiny := fit(fs, notes, 12)
	assert.Equal(t, []string{"", "note b", "note c"}, tiny.text)
	assert.Equal(t, "(1 earlier summaries are left out to fit the context budget.)|(condensed) note b|(condensed) note c", tiny.render("|"))
}

func TestClipNote(t *testing.T) {
	assert.Equal(t, "short", clipNote("short", 10))
	assert.Equal(t, "One fact [a](https://x/1).", clipNote("One fact [a](https://x/1). Two facts [b](https://x/2).", 40), "cut after the last whole sentence")
	assert.Equal(t, "word word word word …", clipNote("word word word word [label](https://vertexaisearch.cloud.google.com/id/1-2)", 40), "a marker is never cut in two")
}

// namedModel is a model that says its name, as the providers' models do.
type namedModel struct {
	llm.Model
	name string
}

func (m namedModel) Name() string { return m.name }

func TestDefaultContextBudgetFor(t *testing.T) {
	assert.Equal(t, SmallContextBudget, DefaultContextBudgetFor(namedModel{name: "qwen3:8b"}))
	assert.Equal(t, SmallContextBudget, DefaultContextBudgetFor(namedModel{name: "Llama-3.1-8B-Instruct"}))
	assert.Equal(t, DefaultContextBudget, DefaultContextBudgetFor(namedModel{name: "gemini-2.5-flash"}))
	assert.Equal(t, DefaultContextBudget, DefaultContextBudgetFor(nil), "a model without a name")
}
