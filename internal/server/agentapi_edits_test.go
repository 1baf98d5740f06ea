package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
)

// Agent Chat UI's edit form holds every argument as text: a list it was
// shown as a JSON array comes back as a string (the array's JSON, or what
// the user typed instead). Its edits of a review's queries and of a plan's
// steps are read as lists, as a JSON array of strings is.
func TestEditDecisionsAsAgentChatUISendsThem(t *testing.T) {
	edit := func(key string, v any) json.RawMessage {
		data, err := json.Marshal(map[string]any{"decisions": []map[string]any{{"type": "edit",
			"edited_action": map[string]any{"name": "x", "args": map[string]any{key: v, "title": "Notes"}}}}})
		require.NoError(t, err)
		return data
	}
	ok := []struct {
		name string
		v    any
		want []string
	}{
		{"a JSON array of strings", []string{"a", "b"}, []string{"a", "b"}},
		{"the array's JSON as the UI shows it", `["raft leader election","raft terms"]`, []string{"raft leader election", "raft terms"}},
		{"the JSON rewritten with spaces", ` [ "one" ,"two"]` + "\n", []string{"one", "two"}},
		{"items on lines", "one\n two \n\n", []string{"one", "two"}},
		{"items separated by ;", "one; two;", []string{"one", "two"}},
	}
	plan := graph.PendingInterrupt{ID: "i", Payload: json.RawMessage(`{"plan":{"title":"Notes","steps":[{"text":"Find"}]}}`)}
	_, err := graph.PayloadOf[nodes.PlanReview](plan)
	require.NoError(t, err, "the test's plan review payload")
	for _, tc := range ok {
		t.Run("queries: "+tc.name, func(t *testing.T) {
			got, err := answerReview(graph.PendingInterrupt{}, edit("queries", tc.v))
			require.NoError(t, err)
			assert.Equal(t, research.ReviewAnswer{Queries: tc.want}, got)
		})
		t.Run("steps: "+tc.name, func(t *testing.T) {
			got, err := answerFlowInterrupt(plan, edit("steps", tc.v))
			require.NoError(t, err)
			assert.Equal(t, nodes.PlanApproval{Title: "Notes", Steps: tc.want}, got)
		})
	}
	bad := []struct {
		name string
		v    any
		want string
	}{
		{"nothing left", " ; \n", "an edit decision needs edited_action.args.queries"},
		{"a broken array", `["one", 2]`, "edited_action.args.queries: the text starts like a JSON array but is not a list of strings"},
		{"a number", 7, "edited_action.args.queries: send a list of strings"},
	}
	for _, tc := range bad {
		t.Run("queries refused: "+tc.name, func(t *testing.T) {
			_, err := answerReview(graph.PendingInterrupt{}, edit("queries", tc.v))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// An edited tool call comes back from Agent Chat UI with every argument as
// text; the arguments the model gave as numbers, booleans, lists or objects
// get their kind back, and the rest stays as sent.
func TestToolCallEditAsAgentChatUISendsIt(t *testing.T) {
	approval := graph.PendingInterrupt{ID: "i", Payload: json.RawMessage(`{"question":"Run fetch_page?","tool":"fetch_page",` +
		`"args":{"url":"https://go.dev/","max_chars":5000,"raw":false,"tags":["a"],"opts":{"x":1},"note":"7"},"call_id":"c1"}`)}
	_, ok := toolApproval(approval)
	require.True(t, ok, "the test's approval payload")
	decision := func(args map[string]any) json.RawMessage {
		data, err := json.Marshal(map[string]any{"decisions": []map[string]any{{"type": "edit",
			"edited_action": map[string]any{"name": "fetch_page", "args": args}}}})
		require.NoError(t, err)
		return data
	}
	got, err := answerQuestion(approval, decision(map[string]any{
		"url": "https://go.dev/doc/", "max_chars": "8000", "raw": "true", "tags": `["a", "b"]`, "opts": `{"x": 2}`,
		"note": "8", "new": "9"}))
	require.NoError(t, err)
	answer, ok := got.(string)
	require.True(t, ok, "%T", got)
	args, found := strings.CutPrefix(answer, string(nodes.ToolEdit)+": ")
	require.True(t, found, answer)
	assert.JSONEq(t, `{"url":"https://go.dev/doc/","max_chars":8000,"raw":true,"tags":["a","b"],"opts":{"x":2},"note":"8","new":"9"}`, args,
		"numbers, booleans, lists and objects as the model gave them; text (note) and new arguments as sent")

	got, err = answerQuestion(approval, decision(map[string]any{"max_chars": "a lot", "tags": "b"}))
	require.NoError(t, err)
	args, _ = strings.CutPrefix(got.(string), string(nodes.ToolEdit)+": ")
	assert.JSONEq(t, `{"max_chars":"a lot","tags":"b"}`, args, "a string that spells no value of the argument's kind is left for the tool to refuse")

	got, err = answerQuestion(approval, decision(map[string]any{"max_chars": 3000}))
	require.NoError(t, err)
	args, _ = strings.CutPrefix(got.(string), string(nodes.ToolEdit)+": ")
	assert.JSONEq(t, `{"max_chars":3000}`, args, "other clients' typed arguments go through as they are")
}
