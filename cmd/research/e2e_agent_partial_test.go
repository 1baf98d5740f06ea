package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent run that fails after some steps shows what it had done: on
// stdout, and in the stored run's document.
func TestE2EAgentFailureShowsThePartialResult(t *testing.T) {
	t.Parallel()
	create := oaCall{Name: "str_replace_editor", Args: `{"command":"create","path":"notes.md","file_text":"# Notes\n"}`}
	oa := newFakeOpenAI(t, agentScript(
		oaReply{Content: "First I write the notes file.", ToolCalls: []oaCall{create}},
		oaReply{Status: 400, ErrBody: `{"error":{"message":"context too long","type":"invalid_request_error"}}`},
	))
	e := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	res := run(t, e, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "Write notes")
	require.Equal(t, 1, res.code, res)
	assert.Contains(t, res.stderr, "context too long")
	assert.Contains(t, res.stdout, "The run stopped before the task was done")
	assert.Contains(t, res.stdout, "First I write the notes file.")
	assert.Contains(t, res.stdout, `str_replace_editor {"command":"create"`)

	list := run(t, e, "runs", "--format", "json")
	require.Equal(t, 0, list.code, list)
	var runs []struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(list.stdout), &runs), list.stdout)
	require.NotEmpty(t, runs)
	shown := run(t, e, "show", runs[0].ID, "--format", "json")
	require.Equal(t, 0, shown.code, shown)
	var doc struct {
		Status  string `json:"status"`
		Partial string `json:"partial"`
	}
	require.NoError(t, json.Unmarshal([]byte(shown.stdout), &doc), shown.stdout)
	assert.Equal(t, "error", doc.Status)
	assert.Contains(t, doc.Partial, "First I write the notes file.")
}
