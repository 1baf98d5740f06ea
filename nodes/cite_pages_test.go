package nodes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/tools"
)

// TestSourcesArePages: one page under several spellings (trailing slash,
// tracking parameter, fragment, http) gets one label in the agent and one
// source in the flow, and the answer cites it once (issue 23, N5).
func TestSourcesArePages(t *testing.T) {
	spellings := []string{
		"https://example.com/page/",
		"https://example.com/page?utm_source=x",
		"https://example.com/page#frag",
		"http://Example.com/page",
	}
	var res tools.Result
	for _, u := range spellings {
		res.Sources = append(res.Sources, tools.Source{URL: u, Title: "A page"})
	}
	added, notes := labelSources(nil, []tools.Result{res})
	require.Len(t, added, 1)
	assert.Equal(t, spellings[0], added[0].URL)
	assert.Equal(t, "Sources in this result; cite them by label, e.g. [S1], right after the claims they support:\n[S1] https://example.com/page/ — A page", notes[0])

	var srcs []citation.Source
	for _, u := range spellings {
		srcs = append(srcs, citation.Source{URL: u, Title: "A page"})
	}
	assert.Len(t, newSources(nil, srcs), 1)
	assert.Empty(t, newSources(added, srcs[1:]))

	text, cited, dropped := citeAnswer("Fact [S1]. Again [it](http://example.com/page?fbclid=9).", added)
	assert.Equal(t, "Fact [1](https://example.com/page/). Again it [1](https://example.com/page/).\n\n## Sources\n\n1. [A page](https://example.com/page/)\n", text)
	assert.Len(t, cited, 1)
	assert.Zero(t, dropped)
}

// TestAgentAnswerSourcesOnce: a Sources list the model wrote is dropped in
// favour of the answer's own, which comes once (issue 23, N7).
func TestAgentAnswerSourcesOnce(t *testing.T) {
	added, _ := labelSources(nil, []tools.Result{{Sources: []tools.Source{{URL: "https://uefa.example/final", Title: "Final"}}}})
	text, cited, dropped := citeAnswer("Spain won [S1].\n\n**Sources:**\n- [S1] https://uefa.example/final — Final\n- [S7] https://evil.example/\n", added)
	assert.Equal(t, "Spain won [1](https://uefa.example/final).\n\n## Sources\n\n1. [Final](https://uefa.example/final)\n", text)
	assert.Len(t, cited, 1)
	assert.Equal(t, 2, dropped, "the invented label and the foreign URL in the model's list")
	assert.Equal(t, 1, strings.Count(text, "Sources"))
}
