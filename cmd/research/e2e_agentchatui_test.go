//go:build unix

package main

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/agentchatui"
)

// TestE2EAgentChatUI: LangChain's Agent Chat UI — the real app, built from
// a checkout ($DEEPGRAPH_AGENT_CHAT_UI, see internal/agentchatui) — in
// headless Chromium against research serve --review, with the fake
// OpenAI-compatible model and the fake SearXNG. A question typed in the
// app starts a research run that pauses for its queries; the app shows the
// stock HITLRequest view; the queries are edited in it (the app sends the
// list as the text of its edit box) and submitted; the run searches the
// edited queries and the app shows the answer with its citations as the
// last AI message. The server's record agrees: the resume was the app's
// edit decision, the run finished, the thread's state holds the edited
// queries and ends with the answer. Screenshots go to $DEEPGRAPH_ARTIFACTS
// (else the test's artifact directory).
func TestE2EAgentChatUI(t *testing.T) {
	app := agentchatui.Build(t) // skips without a checkout, node, npm or Chromium
	ui := app.Start(t)

	web, _ := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	oa := newFakeOpenAI(t, searchResearchScript("raft leader election", "raft log replication"))
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL,
		"DEEPGRAPH_MODEL": "openai:gpt-4.1-mini", "DEEPGRAPH_SERVE_CORS_ORIGINS": ui})
	s := startBin(t, envv, "serve", "--addr", "127.0.0.1:0", "--review")
	s.waitStderr(t, "Serving http://", 30*time.Second)
	api := servingRe.FindStringSubmatch(s.stderr.String())[1]

	const (
		question = "How does Raft elect a leader?"
		chat     = `textarea[placeholder="Type your message..."]`
		// The edit box of the interrupt's action: the one textarea
		// without a placeholder (the chat box and the reject box have one).
		editBox = `textarea:not([placeholder])`
		edited  = `["raft leader election", "raft term numbers"]`
		answer  = "Raft elects a leader by randomized timeouts and replicates its log."
	)
	shots := agentchatui.ShotsDir(t)
	res := app.Drive(t, agentchatui.Session{API: api, Assistant: "research", Shots: shots, Steps: []agentchatui.Step{
		{What: "the chat box shows (not the setup form)", Wait: chat},
		{What: "a question is typed", Fill: chat, Text: question},
		{What: "and sent", Press: chat, Key: "Enter"},
		{What: "the review is shown as the action search_queries", See: "search_queries"},
		{What: "with its queries in an edit box", Wait: editBox},
		{What: "the review's title at the top", Scroll: `p:text-is("search_queries")`},
		{Shot: "research-serve-agent-chat-ui-review.png"},
		{What: "the queries are edited", Fill: editBox, Text: edited},
		{What: "and submitted", Click: `button:text-is("Submit")`},
		{What: "the answer shows", See: answer, Timeout: 2 * time.Minute},
		{What: "with a citation of a page the edited query found", Wait: `a[href*="/page/raft-term-numbers/"]`},
		{Shot: "research-serve-agent-chat-ui-answer.png"},
	}})
	t.Logf("screenshots in %s", shots)

	// What the app sent: the question, then the edit decision as a resume.
	var thread string
	var resumes []json.RawMessage
	streamRe := regexp.MustCompile(`^/threads/([^/]+)/runs/stream$`)
	for _, c := range res.Calls {
		m := streamRe.FindStringSubmatch(c.Path)
		if c.Method != "POST" || m == nil {
			continue
		}
		thread = m[1]
		var body struct {
			AssistantID string `json:"assistant_id"`
			Command     *struct {
				Resume json.RawMessage `json:"resume"`
			} `json:"command"`
		}
		require.NoError(t, json.Unmarshal(c.Body, &body), "%s", c.Body)
		assert.Equal(t, "research", body.AssistantID)
		if body.Command != nil {
			resumes = append(resumes, body.Command.Resume)
			t.Logf("the app resumed the run with: %s", body.Command.Resume)
		}
	}
	require.NotEmpty(t, thread, "the app never started a run: %v", res.Calls)
	require.Len(t, resumes, 1, "one review, answered once")
	want := `{"decisions":[{"type":"edit","edited_action":{"name":"search_queries","args":{"queries":` + jsonString(edited) + `}}}]}`
	assert.JSONEq(t, want, string(resumes[0]), "the app sends the edited list as the text of its edit box")

	// What the server recorded: the run that asked paused, the run that
	// answered finished with the app's decision.
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Kwargs struct {
			Command *struct {
				Resume json.RawMessage `json:"resume"`
			} `json:"command"`
		} `json:"kwargs"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "GET", api+"/threads/"+thread+"/runs", "")), &runs))
	require.Len(t, runs, 2, "the question's run and the review's")
	slices.Reverse(runs) // newest first
	assert.Nil(t, runs[0].Kwargs.Command)
	require.NotNil(t, runs[1].Kwargs.Command, "the review was answered with command.resume")
	assert.JSONEq(t, want, string(runs[1].Kwargs.Command.Resume))
	assert.Equal(t, "success", runs[1].Status)

	var state struct {
		Values struct {
			Messages []struct {
				Type    string `json:"type"`
				Content string `json:"content"`
			} `json:"messages"`
			Queries []string `json:"queries"`
			Sources []struct {
				URL string `json:"url"`
			} `json:"sources"`
		} `json:"values"`
		Next  []string          `json:"next"`
		Tasks []json.RawMessage `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "GET", api+"/threads/"+thread+"/state", "")), &state))
	assert.Equal(t, []string{"raft leader election", "raft term numbers"}, state.Values.Queries, "the edited queries were searched")
	assert.Empty(t, state.Next, "the run finished")
	assert.Empty(t, state.Tasks, "nothing waits")
	msgs := state.Values.Messages
	require.GreaterOrEqual(t, len(msgs), 2)
	assert.Equal(t, "human", msgs[0].Type)
	assert.Equal(t, question, msgs[0].Content)
	last := msgs[len(msgs)-1]
	assert.Equal(t, "ai", last.Type, "the answer is the last message")
	assert.Contains(t, last.Content, answer)
	assert.Contains(t, last.Content, "/page/raft-term-numbers/", "the answer cites what the edited query found")
	require.NotEmpty(t, state.Values.Sources)

	// The thread's history: the question's run paused before
	// review_queries with the model's queries; the review's run went on
	// from there with the edited ones to the end. (An answered interrupt
	// is no longer among the paused checkpoint's tasks' interrupts: they
	// list what waits.)
	var history []struct {
		Next   []string `json:"next"`
		Values struct {
			Queries  []string          `json:"queries"`
			Messages []json.RawMessage `json:"messages"`
		} `json:"values"`
		Metadata struct {
			Step  int    `json:"step"`
			RunID string `json:"run_id"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "POST", api+"/threads/"+thread+"/history", `{"limit":1000}`)), &history))
	var paused, resumed int
	for _, h := range history {
		t.Logf("history: step %d of run %s, next %v, queries %v, %d messages", h.Metadata.Step, h.Metadata.RunID, h.Next, h.Values.Queries, len(h.Values.Messages))
		switch h.Metadata.RunID {
		case runs[0].RunID:
			if slices.Equal(h.Next, []string{"review_queries"}) {
				paused++
				assert.Equal(t, []string{"raft leader election", "raft log replication"}, h.Values.Queries, "the review was of the model's queries")
			}
		case runs[1].RunID:
			resumed++
			assert.Equal(t, []string{"raft leader election", "raft term numbers"}, h.Values.Queries)
		default:
			t.Errorf("a checkpoint of no run of the thread: %+v", h)
		}
	}
	assert.Equal(t, 1, paused, "one pause for review")
	assert.Positive(t, resumed, "the review's run went on")
	require.NotEmpty(t, history)
	assert.Equal(t, runs[1].RunID, history[0].Metadata.RunID)
	assert.Empty(t, history[0].Next, "the newest checkpoint is the end")

	// The searches: the edited queries, not the one the edit replaced.
	var searched []string
	for _, r := range sx.all() {
		v, err := url.ParseQuery(r.RawQuery)
		require.NoError(t, err)
		if q := v.Get("q"); q != "" && !slices.Contains(searched, q) {
			searched = append(searched, q)
		}
	}
	assert.ElementsMatch(t, []string{"raft leader election", "raft term numbers"}, searched)

	// The page: the answer comes after the question, last.
	assert.Greater(t, strings.LastIndex(res.Text, answer), strings.LastIndex(res.Text, question), "the answer is the last message in the page:\n%s", res.Text)

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, s.wait(t, 30*time.Second).code)
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
