package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A one-word question close to a command name is refused as a typo before
// anything is paid for; a real one-word question still runs.
func TestE2EMistypedCommand(t *testing.T) {
	oa, _, _, vars := searchSetup(t)
	for word, want := range map[string]string{
		"confg": "did you mean research config?",
		"agnet": "did you mean research agent?",
		"serv":  "did you mean research serve?",
	} {
		res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", word)
		assert.Equal(t, exitUsage, res.code, res)
		assert.Contains(t, res.stderr, want)
		assert.Contains(t, res.stderr, `research "what is `+word+`?"`, "says how to ask about the word itself")
	}
	assert.Zero(t, oa.count(), "no model call for a typo")

	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft")
	require.Equal(t, 0, res.code, res)
	assert.Positive(t, oa.count(), "a one-word question that is no command runs")
}

// --format json prints a document even when the run fails: incomplete,
// with the error, as the README promises.
func TestE2EJSONOnFailure(t *testing.T) {
	_, sx, _, vars := searchSetup(t)
	sx.setRespond(func(string) (int, any) {
		return http.StatusServiceUnavailable, map[string]any{"error": "maintenance"}
	})
	res := run(t, env(t, vars), "--format", "json", "--model", "openai:gpt-4.1-mini", "--retries", "0", "Raft?")
	require.Equal(t, exitFailed, res.code, res)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), "stdout is one JSON document:\n%s", res)
	assert.Equal(t, "deepgraph.research.report/v2", doc["schema"])
	assert.Equal(t, "Raft?", doc["question"])
	assert.Equal(t, true, doc["incomplete"])
	assert.Contains(t, doc["error"], "503")
	assert.Contains(t, res.stderr, "web_research failed", "the error is still on stderr")
}

// A question piped in beyond the limit is refused, not cut silently.
func TestE2EStdinTooLong(t *testing.T) {
	oa, _, _, vars := searchSetup(t)
	long := strings.Repeat("why is the sky blue? ", 4000) // 84 KB
	res := runIn(t, strings.NewReader(long), env(t, vars), "--model", "openai:gpt-4.1-mini")
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "longer than 64 KiB")
	assert.Zero(t, oa.count())
}
