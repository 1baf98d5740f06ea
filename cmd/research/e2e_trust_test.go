package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A misspelt command is refused before anything is paid for, whatever
// follows it, with the command meant and the line that researches the text
// instead; questions that merely start like a command, a quoted question
// and one after "--" still run.
func TestE2EMistypedCommand(t *testing.T) {
	t.Parallel()
	oa, _, _, vars := searchSetup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"confg"}, `unknown command "confg" — did you mean research config? To research the text, use research -- "confg"`},
		{[]string{"agnet"}, "did you mean research agent?"},
		{[]string{"serv"}, "did you mean research serve?"},
		{[]string{"agnet", "do something"}, `unknown command "agnet" — did you mean research agent? To research the text, use research -- "agnet do something"`},
		{[]string{"shwo", "abcd"}, `unknown command "shwo" — did you mean research show? To research the text, use research -- "shwo abcd"`},
		{[]string{"--effort", "low", "resmue", "k3f9"}, "did you mean research resume?"},
		{[]string{"Agnet", "plan", "a", "trip"}, `did you mean research agent? To research the text, use research -- "Agnet plan a trip"`},
		{[]string{"graph", "databases", "vs", "SQL"}, `graph takes no arguments — to research the text, use research -- "graph databases vs SQL"`},
		{[]string{"show", "me", "the", "best", "laptops"}, `show takes 1 arg(s), received 4 — to research the text, use research -- "show me the best laptops"`},
	} {
		res := run(t, env(t, vars), append([]string{"--model", "openai:gpt-4.1-mini"}, tc.args...)...)
		assert.Equal(t, exitUsage, res.code, res)
		assert.Contains(t, res.stderr, tc.want, "%q", tc.args)
	}
	assert.Zero(t, oa.count(), "no model call for a typo")

	for _, args := range [][]string{
		{"Raft"},                           // a one-word question that is no command
		{"how", "does", "Raft", "work?"},   // "how" is one letter from "show"
		{"agents", "in", "Raft?"},          // "agents" is "agent" and an ending
		{"agnet do something"},             // quoted: a question
		{"--", "agnet", "do", "something"}, // after --: a question
	} {
		before := oa.count()
		res := run(t, env(t, vars), append([]string{"--model", "openai:gpt-4.1-mini", "--effort", "low"}, args...)...)
		require.Equal(t, 0, res.code, "%q: %s", args, res)
		assert.Greater(t, oa.count(), before, "%q runs", args)
	}
}

// The typo rule of mistypedCommand: what counts as one typo of a command.
func TestIsTypo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		word, name string
		want       bool
	}{
		{"agnet", "agent", true},   // swapped
		{"shwo", "show", true},     // swapped
		{"hsow", "show", true},     // swapped, first two
		{"aggent", "agent", true},  // doubled
		{"confg", "config", true},  // left out inside
		{"agenr", "agent", true},   // neighbouring key
		{"mpc", "mcp", true},       // swapped, short name
		{"how", "show", false},     // first letter left out
		{"snow", "show", false},    // n is not beside h on its row
		{"shows", "show", false},   // an ending
		{"agents", "agent", false}, // an ending
		{"server", "serve", false}, // an ending
		{"run", "runs", false},     // last letter left out
		{"mvp", "mcp", false},      // short names: swaps and doubles only
		{"mr", "rm", false},        // two letters: not even swaps
		{"sgow", "show", true},     // neighbouring key
		{"agent", "agent", false},  // the name itself is no typo (cobra runs it)
	} {
		assert.Equal(t, tc.want, isTypo(tc.word, tc.name) && tc.word != tc.name, "%s ~ %s", tc.word, tc.name)
	}
}

// --format json prints a document even when the run fails: incomplete,
// with the error, as the README promises.
func TestE2EJSONOnFailure(t *testing.T) {
	t.Parallel()
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
	assert.Contains(t, res.stderr, "every search failed", "the error is still on stderr")
}

// A question piped in beyond the limit is refused, not cut silently.
func TestE2EStdinTooLong(t *testing.T) {
	t.Parallel()
	oa, _, _, vars := searchSetup(t)
	long := strings.Repeat("why is the sky blue? ", 4000) // 84 KB
	res := runIn(t, strings.NewReader(long), env(t, vars), "--model", "openai:gpt-4.1-mini")
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "longer than the 64 KiB a question or task may be")
	assert.Zero(t, oa.count())
}

// A question given as arguments has the same cap as one piped in: 100 KB
// is refused before any model call, not sent (it was 210k tokens).
func TestE2EQuestionArgTooLong(t *testing.T) {
	t.Parallel()
	oa, _, _, vars := searchSetup(t)
	long := strings.Repeat("why is the sky blue? ", 5000) // 105 KB
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", long)
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "the question is 103 KiB, longer than the 64 KiB a question or task may be")
	res = run(t, env(t, vars), "agent", "--model", "openai:gpt-4.1-mini", long)
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "longer than the 64 KiB")
	assert.Zero(t, oa.count())
}
