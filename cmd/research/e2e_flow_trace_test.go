package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flow — its planner, the researcher executor's deep-search run and the
// agent executor's run with its tools — is one trace.
func TestE2EFlowIsOneTrace(t *testing.T) {
	t.Parallel()
	web, _ := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	ws := t.TempDir()
	oa := newFakeOpenAI(t, flowScript(t, ws, false))
	vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	res := run(t, env(t, vars), "flow", "--trace", path, "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1",
		"--workspace", ws, "Research how Raft elects a leader and write notes to raft.md")
	require.Equal(t, 0, res.code, res)

	// traceTree fails on a span of another trace or without its parent.
	tree, byName := traceTree(t, path, "deepgraph.role", "gen_ai.tool.name")
	t.Logf("trace:\n%s", tree)
	var roots int
	for _, spans := range byName {
		for _, s := range spans {
			if s.ParentSpanID == "" {
				roots++
				assert.Equal(t, "graph.run", s.Name, "the flow's run is the root")
			}
		}
	}
	assert.Equal(t, 1, roots)
	assert.GreaterOrEqual(t, len(byName["graph.run"]), 3, "the flow, the researcher's run and the agent's run")
	roles := map[string]bool{}
	for _, c := range byName["chat gpt-4.1-mini"] {
		r, _ := spanAttr(c, "deepgraph.role")
		roles[r] = true
	}
	assert.True(t, roles["agent"], "the planner's and the agent's model calls are spans: %v", roles)
	assert.True(t, roles["query"] && roles["answer"], "the researcher's model calls are spans: %v", roles)
	assert.NotEmpty(t, byName["execute_tool str_replace_editor"], "the agent's tool calls are spans")
	assert.NotEmpty(t, byName["read_page"])
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(data), "randomized timeouts"), "no tool arguments or answers without opting in")
}
