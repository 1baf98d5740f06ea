package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With every page refused by the SSRF guard (the fake web is on loopback)
// the run still answers from the snippets, exit 0, but says so without
// -v: warnings on the timeline, a loud last line, a note atop the report
// and warnings in the JSON document.
func TestE2EEveryPageRefusedIsSaid(t *testing.T) {
	t.Parallel()
	_, _, webRec, vars := searchSetup(t)
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--loops", "1", "How does Raft elect a leader?")
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, 0, webRec.count())
	assert.Contains(t, res.stderr, `Warning: "raft leader election": 3 pages were refused by the network guard`)
	assert.Contains(t, res.stderr, "(--allow-private-urls lets pages on private and loopback addresses be read)", "the refusal says how to lift it")
	assert.Contains(t, res.stderr, "research: warning: no page could be read: the answer is based on search snippets only (some were refused: --allow-private-urls")
	assert.Contains(t, res.stdout, "**Based on search snippets only.**")
	timelineLines(t, res.stderr)

	res = run(t, env(t, vars), "-q", "--format", "json", "--model", "openai:gpt-4.1-mini", "--loops", "1", "How does Raft elect a leader?")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stderr, "no page could be read", "said even with -q")
	var doc struct {
		Dropped  *int `json:"dropped_citations"`
		Warnings []struct {
			Kind    string   `json:"kind"`
			Message string   `json:"message"`
			Count   int      `json:"count"`
			Items   []string `json:"items"`
		} `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	require.NotNil(t, doc.Dropped, "dropped_citations is the one name")
	assert.NotContains(t, res.stdout, "citations_dropped")
	require.Len(t, doc.Warnings, 2, res.stdout)
	assert.Equal(t, "pages_refused", doc.Warnings[0].Kind)
	assert.Equal(t, 6, doc.Warnings[0].Count)
	assert.NotEmpty(t, doc.Warnings[0].Items)
	assert.Equal(t, "snippets_only", doc.Warnings[1].Kind)
	assert.True(t, strings.HasPrefix(doc.Warnings[1].Message, "no page could be read"))
}
