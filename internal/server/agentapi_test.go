package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// lgEvent is one Server-Sent Event of the Agent Server API.
type lgEvent struct {
	Event string
	Data  json.RawMessage
}

// lgStream posts a run to the Agent Server API and reads its whole stream.
func (ts *testServer) lgStream(path string, body any) []lgEvent {
	ts.t.Helper()
	data, err := json.Marshal(body)
	require.NoError(ts.t, err)
	req, err := http.NewRequest("POST", ts.http.URL+path, strings.NewReader(string(data)))
	require.NoError(ts.t, err)
	req.Header.Set("Content-Type", "application/json")
	if ts.token != "" {
		req.Header.Set("X-Api-Key", ts.token)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	require.Equal(ts.t, 200, resp.StatusCode)
	require.Equal(ts.t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.NotEmpty(ts.t, resp.Header.Get("Content-Location"))
	return readLGEvents(ts.t, resp.Body, false)
}

// readLGEvents reads a run's SSE stream into its events, without the
// metadata event when skipMetadata.
func readLGEvents(t testing.TB, body io.Reader, skipMetadata bool) []lgEvent {
	t.Helper()
	var out []lgEvent
	for _, ev := range readSSE(t, body, nil) {
		if !skipMetadata || ev.Type != "metadata" {
			out = append(out, lgEvent{Event: ev.Type, Data: json.RawMessage(ev.Data)})
		}
	}
	return out
}

func lgOf(evs []lgEvent, name string) []lgEvent {
	var out []lgEvent
	for _, e := range evs {
		if e.Event == name {
			out = append(out, e)
		}
	}
	return out
}

// values of a research thread, as the API shows them.
type lgResearchValues struct {
	Messages []agentserver.Message `json:"messages"`
	Queries  []string              `json:"queries"`
	Answer   string                `json:"answer"`
	Sources  []struct {
		URL   string `json:"url"`
		Label string `json:"label"`
	} `json:"sources"`
	Interrupt []struct {
		ID    string      `json:"id"`
		Value hitlRequest `json:"value"`
	} `json:"__interrupt__"`
}

func TestAgentAPIResearchRun(t *testing.T) {
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.Token = "tok" })
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	status, data, _ := ts.do("POST", "/threads", map[string]any{})
	require.Equal(t, 200, status, "%s", data)
	require.NoError(t, json.Unmarshal(data, &th))

	evs := ts.lgStream("/threads/"+th.ThreadID+"/runs/stream", map[string]any{
		"assistant_id": agentserver.AssistantID("research"),
		"input":        map[string]any{"messages": []map[string]any{{"type": "human", "content": "What is deep research?"}}},
		"stream_mode":  []string{"values", "messages-tuple", "custom"},
	})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values := lgOf(evs, "values")
	require.NotEmpty(t, values)
	var final lgResearchValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &final))

	// The answer is the last ai message, with its checked citations, and
	// the cited sources are in the values.
	require.Len(t, final.Messages, 2)
	assert.Equal(t, agentserver.MessageHuman, final.Messages[0].Type)
	answer := final.Messages[1]
	assert.Equal(t, agentserver.MessageAI, answer.Type)
	assert.Equal(t, final.Answer, answer.Content)
	assert.Contains(t, answer.Content, "## Findings")
	require.NotEmpty(t, final.Sources)
	for _, s := range final.Sources {
		assert.NotEmpty(t, s.URL)
	}

	// The streamed answer's chunks carry the id of the message they become.
	chunks := lgOf(evs, "messages")
	require.NotEmpty(t, chunks)
	for _, c := range chunks {
		var tuple []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(c.Data, &tuple))
		assert.Equal(t, answer.ID, tuple[0].ID)
	}

	// The timeline and the cost are custom events.
	kinds := map[string]bool{}
	costs := 0
	for _, c := range lgOf(evs, "custom") {
		var ce customEvent
		require.NoError(t, json.Unmarshal(c.Data, &ce))
		switch ce.Type {
		case "activity":
			kinds[ce.Activity.Kind] = true
			assert.NotEmpty(t, ce.Activity.Kind)
		case "cost":
			costs++
			assert.Positive(t, ce.Tokens)
		default:
			t.Errorf("unknown custom event %s", c.Data)
		}
	}
	for _, k := range []string{"generating_queries", "queries", "searching", "searched", "reflected", "answered"} {
		assert.True(t, kinds[k], "the timeline has %s: %v", k, kinds)
	}
	assert.Positive(t, costs)

	// The thread is listed for Agent Chat UI's sidebar by its graph.
	var found []struct {
		ThreadID string `json:"thread_id"`
	}
	status, data, _ = ts.do("POST", "/threads/search", map[string]any{"metadata": map[string]string{"graph_id": "research"}}, "X-Api-Key", "tok")
	require.Equal(t, 200, status, "%s", data)
	require.NoError(t, json.Unmarshal(data, &found))
	require.Len(t, found, 1)
	assert.Equal(t, th.ThreadID, found[0].ThreadID)

	// The token is needed, as x-api-key or bearer.
	ts.token = ""
	status, _, _ = ts.do("POST", "/threads/search", map[string]any{})
	assert.Equal(t, 401, status)
}

func TestAgentAPIReviewIsHITLRequest(t *testing.T) {
	ts := newTestServer(t, world{})
	status, data, _ := ts.do("POST", "/threads", map[string]any{})
	require.Equal(t, 200, status)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(data, &th))
	path := "/threads/" + th.ThreadID + "/runs/stream"
	evs := ts.lgStream(path, map[string]any{"assistant_id": "research",
		"input":  map[string]any{"messages": []map[string]any{{"type": "human", "content": "Review my queries"}}},
		"config": map[string]any{"configurable": map[string]any{"review": true}}})
	values := lgOf(evs, "values")
	var paused lgResearchValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &paused))
	require.Len(t, paused.Interrupt, 1, "%s", values[len(values)-1].Data)
	hitl := paused.Interrupt[0].Value
	require.Len(t, hitl.ActionRequests, 1)
	assert.Equal(t, "search_queries", hitl.ActionRequests[0].Name)
	assert.Contains(t, string(hitl.ActionRequests[0].Args), "query 1")
	assert.Equal(t, []reviewConfig{{ActionName: "search_queries", AllowedDecisions: []string{"approve", "edit", "reject"}}}, hitl.ReviewConfigs)

	// Agent Chat UI's answer: an edit of the action, with an empty input.
	evs = ts.lgStream(path, map[string]any{"assistant_id": "research", "input": map[string]any{},
		"command": map[string]any{"resume": map[string]any{"decisions": []map[string]any{{"type": "edit",
			"edited_action": map[string]any{"name": "search_queries", "args": map[string]any{"queries": []string{"my own query"}}}}}}}})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values = lgOf(evs, "values")
	var done lgResearchValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &done))
	assert.Equal(t, []string{"my own query"}, done.Queries)
	assert.Empty(t, done.Interrupt)
	assert.NotEmpty(t, done.Answer)
}

// With serve.review a research run that says nothing of review — as
// Agent Chat UI's runs, which carry no configuration — pauses for its
// queries; one whose configurable.review is false does not; the
// assistants' metadata says which is the default.
func TestAgentAPIDefaultReview(t *testing.T) {
	ts := newTestServer(t, world{}, func(_ *Options, e *testEngine) { e.defaultReview = true })
	var assistants []struct {
		Metadata struct {
			Deepgraph Info `json:"deepgraph"`
		} `json:"metadata"`
	}
	status, data, _ := ts.do("POST", "/assistants/search", map[string]any{})
	require.Equal(t, 200, status, "%s", data)
	require.NoError(t, json.Unmarshal(data, &assistants))
	require.NotEmpty(t, assistants)
	assert.True(t, assistants[0].Metadata.Deepgraph.DefaultReview)

	ask := func(body map[string]any) lgResearchValues {
		th := ts.newThread()
		body["assistant_id"] = "research"
		body["input"] = map[string]any{"messages": []map[string]any{{"type": "human", "content": "Review my queries"}}}
		values := lgOf(ts.lgStream("/threads/"+th.ThreadID+"/runs/stream", body), "values")
		var last lgResearchValues
		require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &last))
		return last
	}
	paused := ask(map[string]any{})
	require.Len(t, paused.Interrupt, 1, "a run without configuration pauses for its queries")
	assert.Equal(t, "search_queries", paused.Interrupt[0].Value.ActionRequests[0].Name)
	assert.Empty(t, paused.Answer)

	done := ask(map[string]any{"config": map[string]any{"configurable": map[string]any{"review": false}}})
	assert.Empty(t, done.Interrupt, "configurable.review false wins over the server's default")
	assert.NotEmpty(t, done.Answer)
}

func TestAgentAPICORS(t *testing.T) {
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.CORSOrigins = []string{"http://ui.example"} })
	req, err := http.NewRequest("OPTIONS", ts.http.URL+"/threads/x/runs/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://ui.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "x-api-key, content-type")
	resp, err := ts.http.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 204, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Api-Key")
	assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Content-Location")
	assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Location")
	status, _, _ := ts.do("GET", "/info", nil, "Origin", "http://evil.example")
	assert.Equal(t, 403, status)
}

// The agent over the Agent Server API: its question is an interrupt
// answered with command.resume, its tool calls and results are messages,
// its answer the last ai message, and its thread takes one task.
func TestAgentAPIAgentQuestion(t *testing.T) {
	eng := newEngine(world{})
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("ask_human", map[string]string{"question": "Which year?"})),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done for **2024**."})).When(fake.AnyContains("2024")),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	status, data, _ := ts.do("POST", "/threads", map[string]any{})
	require.Equal(t, 200, status)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(data, &th))
	path := "/threads/" + th.ThreadID + "/runs/stream"
	evs := ts.lgStream(path, map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "Summarise the year"}}}, "stream_mode": []string{"values", "custom"}})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values := lgOf(evs, "values")
	var paused struct {
		Interrupt []struct {
			Value struct {
				Question       string
				ActionRequests []struct {
					Name string `json:"name"`
					Args struct {
						Question string `json:"question"`
					} `json:"args"`
				} `json:"action_requests"`
			} `json:"value"`
		} `json:"__interrupt__"`
	}
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &paused))
	require.Len(t, paused.Interrupt, 1, "%s", values[len(values)-1].Data)
	assert.Equal(t, "Which year?", paused.Interrupt[0].Value.Question)
	// For Agent Chat UI, a HITLRequest whose action's edited args.answer
	// is the answer.
	require.Len(t, paused.Interrupt[0].Value.ActionRequests, 1)
	assert.Equal(t, "ask_human", paused.Interrupt[0].Value.ActionRequests[0].Name)
	assert.Equal(t, "Which year?", paused.Interrupt[0].Value.ActionRequests[0].Args.Question)

	evs = ts.lgStream(path, map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": map[string]any{"decisions": []map[string]any{
		{"type": "edit", "edited_action": map[string]any{"name": "ask_human", "args": map[string]string{"question": "Which year?", "answer": "2024"}}}}}},
		"stream_mode": []string{"values", "custom"}})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values = lgOf(evs, "values")
	var done agentValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &done))
	assert.Equal(t, "Done for **2024**.", done.Answer)
	require.NotEmpty(t, done.Messages)
	assert.Equal(t, agentserver.MessageHuman, done.Messages[0].Type)
	assert.Equal(t, "Summarise the year", done.Messages[0].Content)
	last := done.Messages[len(done.Messages)-1]
	assert.Equal(t, agentserver.MessageAI, last.Type)
	assert.Equal(t, "Done for **2024**.", last.Content)
	var calls, results int
	for _, m := range done.Messages {
		calls += len(m.ToolCalls)
		if m.Type == agentserver.MessageTool {
			results++
		}
	}
	assert.Positive(t, calls, "tool calls are messages")
	assert.Positive(t, results, "tool results are messages")
	var kinds []string
	for _, c := range lgOf(evs, "custom") {
		var ce customEvent
		require.NoError(t, json.Unmarshal(c.Data, &ce))
		if ce.Type == "activity" {
			kinds = append(kinds, ce.Activity.Kind)
		}
	}
	assert.Contains(t, kinds, "agent_done")
	// Its answer is stored as research agent stores it, for research show.
	runs, err := ts.store.Runs.ThreadRuns(t.Context(), th.ThreadID)
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	stored, err := ts.store.Runs.Get(t.Context(), runs[len(runs)-1].ID)
	require.NoError(t, err)
	var doc app.AgentDoc
	require.NoError(t, json.Unmarshal(stored.Report, &doc), "the run's report: %q", stored.Report)
	assert.Equal(t, "Done for **2024**.", doc.Answer)
	assert.Equal(t, nodes.AgentSuccess, doc.Status)

	evs = ts.lgStream(path, map[string]any{"assistant_id": "agent", "input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "more"}}}})
	require.Len(t, lgOf(evs, "error"), 1)
	assert.Contains(t, string(lgOf(evs, "error")[0].Data), "one task")
}

// The Agent Server API keeps the queue's bound: at most MaxRunning runs
// execute and QueueSize wait; one more gets 429 with Retry-After; a run
// cancelled gives its place back.
func TestAgentAPIQueueBound(t *testing.T) {
	ts := newTestServer(t, world{block: "query 1"}, queueOf(1, 0))
	start := func(want int) (lgRun, []byte, http.Header) {
		th := ts.newThread()
		status, data, hdr := ts.do("POST", "/threads/"+th.ThreadID+"/runs",
			map[string]any{"assistant_id": "research", "input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "q"}}}})
		require.Equal(t, want, status, "%s", data)
		var r lgRun
		if status == 200 {
			require.NoError(t, json.Unmarshal(data, &r))
		}
		return r, data, hdr
	}
	first, _, _ := start(200)
	require.Eventually(t, func() bool {
		return lgCall[lgRun](ts, "GET", "/threads/"+first.ThreadID+"/runs/"+first.RunID, nil, 200).Status == "running"
	}, 30*time.Second, 10*time.Millisecond)
	_, data, hdr := start(http.StatusTooManyRequests)
	assert.Contains(t, string(data), "limit of 1 running and 0 waiting runs")
	// No run has ended yet: the drain rate is unknown (internal/drain).
	assert.Equal(t, "30", hdr.Get("Retry-After"))

	status, _, _ := ts.do("POST", "/threads/"+first.ThreadID+"/runs/"+first.RunID+"/cancel?wait=1", nil)
	require.Equal(t, http.StatusNoContent, status)
	second, _, _ := start(200)
	status, _, _ = ts.do("POST", "/threads/"+second.ThreadID+"/runs/"+second.RunID+"/cancel?wait=1", nil)
	require.Equal(t, http.StatusNoContent, status)
}

// The Agent Server API's bodies and questions are bounded, and a run's
// bad input or configuration says what is wrong: before the run (422) for
// the request's shape, in the stream's error event for what the run reads.
func TestAgentAPILimitsAndBadRequests(t *testing.T) {
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.MaxQuestion = 100; o.MaxBody = 4096 })
	th := ts.newThread()
	path := "/threads/" + th.ThreadID + "/runs/wait"
	ask := func(question string, configurable map[string]any) map[string]any {
		return map[string]any{"assistant_id": "research", "config": map[string]any{"configurable": configurable},
			"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": question}}}}
	}
	status, data, _ := ts.do("POST", path, ask(strings.Repeat("x", 5000), nil))
	assert.Equal(t, 413, status)
	assert.Contains(t, string(data), "over 4096 bytes")
	status, data, _ = ts.do("POST", path, map[string]any{"assistant_id": "research", "multitask_strategy": "sometimes"})
	assert.Equal(t, 422, status)
	assert.Contains(t, string(data), "multitask_strategy")
	status, data, _ = ts.do("POST", path, map[string]any{"assistant_id": "poem"})
	assert.Equal(t, 404, status)
	assert.Contains(t, string(data), "research")

	for _, c := range []struct {
		name         string
		question     string
		configurable map[string]any
		want         string
	}{
		{"a question over the limit", strings.Repeat("é", 101), nil, "101 characters; this server takes at most 100"},
		{"an empty question", "  ", nil, "the input has no question"},
		{"an unknown effort", "q", map[string]any{"effort": "extreme"}, "effort"},
		{"a model not offered", "q", map[string]any{"models": map[string]string{"answer": "openai:gpt-5"}}, "not offered"},
		{"a back end not configured", "q", map[string]any{"backend": "corpus"}, "not configured"},
	} {
		out := lgCall[map[string]json.RawMessage](ts, "POST", "/threads/"+th.ThreadID+"/runs/wait", ask(c.question, c.configurable), 200)
		assert.Contains(t, string(out["__error__"]), c.want, c.name)
	}

	req, err := http.NewRequest("POST", ts.http.URL+path, strings.NewReader("assistant_id=research"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := ts.http.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "a form post (no preflight) is refused")
	runs := lgCall[[]lgRun](ts, "GET", "/threads/"+th.ThreadID+"/runs", nil, 200)
	require.NotEmpty(t, runs)
	status, data, _ = ts.do("GET", "/threads/"+th.ThreadID+"/runs/"+runs[0].RunID+"/stream", nil, "Last-Event-ID", "abc")
	assert.Equal(t, 422, status)
	assert.Contains(t, string(data), "Last-Event-ID")
}

// lgAgentRun streams an agent run of task on a new thread of the Agent
// Server API (values and custom modes).
func (ts *testServer) lgAgentRun(task string) (string, []lgEvent) {
	ts.t.Helper()
	th := ts.newThread()
	return th.ThreadID, ts.lgStream("/threads/"+th.ThreadID+"/runs/stream", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": task}}}, "stream_mode": []string{"values", "custom"}})
}

// An agent run that reaches its step limit did not do its task: it fails
// with why — in its stream, its status and the run store — its best-effort
// answer in its values; never success.
func TestAgentAPIStepLimitFails(t *testing.T) {
	eng := newEngine(world{})
	var replies []fake.Reply
	for i := range 5 { // the harness's agents have 5 steps
		replies = append(replies, fake.ToolCalls(fake.ToolCall("no_such_tool", map[string]int{"try": i})).WithTokens(100, 10))
	}
	replies = append(replies, fake.Text("A best effort.").WithTokens(100, 10))
	eng.agentScript = fake.New(replies...)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	tid, evs := ts.lgAgentRun("Loop")
	errs := lgOf(evs, "error")
	require.Len(t, errs, 1)
	assert.Contains(t, string(errs[0].Data), "step limit (5")
	values := lgOf(evs, "values")
	var v agentValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &v))
	assert.Equal(t, "max_steps", string(v.Status))
	assert.Equal(t, "A best effort.", v.Answer, "the best effort is kept")
	runs := lgCall[[]lgRun](ts, "GET", "/threads/"+tid+"/runs", nil, 200)
	require.Len(t, runs, 1)
	assert.Equal(t, "error", runs[0].Status, "a run that ran out of steps is not a success")
	stored, err := ts.store.Runs.Get(t.Context(), runs[0].RunID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusFailed, stored.Status)
	assert.Contains(t, stored.Error, "step limit (5")
}

// An agent's timeline counts its tokens as its steps spend them.
func TestAgentAPITimelineTokens(t *testing.T) {
	eng := newEngine(world{})
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("no_such_tool", map[string]string{})).WithTokens(1000, 100),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(2000, 100),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	_, evs := ts.lgAgentRun("Finish")
	var steps []string
	for _, ev := range lgOf(evs, "custom") {
		var ce customEvent
		require.NoError(t, json.Unmarshal(ev.Data, &ce))
		if ce.Type == "activity" {
			steps = append(steps, fmt.Sprintf("%s %d", ce.Activity.Kind, ce.Activity.Tokens))
		}
	}
	assert.Equal(t, []string{"agent_think 1100", "agent_act 1100", "agent_think 3200", "agent_act 3200", "agent_done 3200"}, steps)
}

// A review over the Agent Server API also takes the CLI's answers: the
// thread waits (status interrupted; a run with input null is refused); an
// answer that is not a review answer fails the run and leaves the review
// waiting; {queries} replaces the proposed queries.
func TestAgentAPIReviewTakesTheCLIsAnswers(t *testing.T) {
	eng := newEngine(world{queries: 2})
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	th := ts.newThread()
	path := "/threads/" + th.ThreadID
	resume := func(answer any) map[string]json.RawMessage {
		return lgCall[map[string]json.RawMessage](ts, "POST", path+"/runs/wait", map[string]any{"assistant_id": "research", "command": map[string]any{"resume": answer}}, 200)
	}
	paused := lgCall[lgResearchValues](ts, "POST", path+"/runs/wait", map[string]any{"assistant_id": "research",
		"input":  map[string]any{"messages": []map[string]string{{"type": "human", "content": "q"}}},
		"config": map[string]any{"configurable": map[string]any{"effort": "medium", "review": true}}}, 200)
	require.Len(t, paused.Interrupt, 1)
	assert.Contains(t, string(paused.Interrupt[0].Value.ActionRequests[0].Args), `"query 1","query 2"`)
	thread := lgCall[struct {
		Status string `json:"status"`
	}](ts, "GET", path, nil, 200)
	assert.Equal(t, "interrupted", thread.Status)
	status, data, _ := ts.do("POST", path+"/runs/wait", map[string]any{"assistant_id": "research", "input": nil})
	assert.Equal(t, 422, status)
	assert.Contains(t, string(data), "command.resume")

	assert.Contains(t, string(resume(map[string]any{"querys": []string{"x"}})["__error__"]), "review answer")
	done := resume(map[string]any{"queries": []string{"edited query"}})
	assert.Contains(t, string(done["answer"]), "The answer is")
	assert.Equal(t, 1, countQuery(eng.search, "edited query"))
	assert.Zero(t, countQuery(eng.search, "query 1"), "the proposed queries were replaced")
}

// noteTool writes notes: a tool with side effects, for approvals.
type noteTool struct {
	*tools.FuncTool[struct {
		Text string `json:"text"`
	}]
}

func (noteTool) Effect(json.RawMessage) tools.Effect { return tools.Effect{Effectful: true} }

// An agent run's request to run a tool with side effects is LangChain's
// HITLRequest (the tool, its arguments, approve/edit/reject), and Agent
// Chat UI's decisions answer it: an edit runs the call with the edited
// arguments, a reject does not run it and tells the model the message.
func TestAgentAPIToolApprovalDecisions(t *testing.T) {
	var mu sync.Mutex
	var written []string
	fn, err := tools.Func("write_note", "Writes a note.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (tools.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		written = append(written, a.Text)
		return tools.Result{Output: "wrote " + a.Text}, nil
	})
	require.NoError(t, err)
	eng := newEngine(world{})
	eng.agentTools, eng.approveTools = []tools.Tool{noteTool{fn}}, true
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Kept one note."})).When(fake.AnyContains("not now")),
		fake.ToolCalls(fake.ToolCall("write_note", map[string]string{"text": "second"})).When(fake.AnyContains("wrote edited")),
		fake.ToolCalls(fake.ToolCall("write_note", map[string]string{"text": "first"})),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	th := ts.newThread()
	path := "/threads/" + th.ThreadID + "/runs/wait"
	type request struct {
		ActionRequests []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"action_requests"`
		ReviewConfigs []struct {
			ActionName       string   `json:"action_name"`
			AllowedDecisions []string `json:"allowed_decisions"`
		} `json:"review_configs"`
		Question string `json:"question"`
	}
	asked := func(out map[string]json.RawMessage) request {
		t.Helper()
		var intr []struct {
			Value request `json:"value"`
		}
		require.NoError(t, json.Unmarshal(out["__interrupt__"], &intr), "%s", out["__interrupt__"])
		require.Len(t, intr, 1)
		return intr[0].Value
	}
	out := lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "Write notes"}}}}, 200)
	req := asked(out)
	require.Len(t, req.ActionRequests, 1)
	assert.Equal(t, "write_note", req.ActionRequests[0].Name)
	assert.JSONEq(t, `{"text":"first"}`, string(req.ActionRequests[0].Args))
	require.Len(t, req.ReviewConfigs, 1)
	assert.Equal(t, []string{"approve", "edit", "reject"}, req.ReviewConfigs[0].AllowedDecisions)
	assert.Contains(t, req.Question, "write_note")

	out = lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": map[string]any{
		"decisions": []map[string]any{{"type": "edit", "edited_action": map[string]any{"name": "write_note", "args": map[string]string{"text": "edited"}}}}}}}, 200)
	assert.JSONEq(t, `{"text":"second"}`, string(asked(out).ActionRequests[0].Args))
	// A decision that cannot be read is refused (runs/wait answers with
	// the error in its body, as LangGraph's does), and the question stays.
	out = lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": map[string]any{
		"decisions": []map[string]any{{"type": "edit"}}}}}, 200)
	assert.Contains(t, string(out["__error__"]), "an edit decision needs edited_action.args")

	out = lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": map[string]any{
		"decisions": []map[string]any{{"type": "reject", "message": "not now"}}}}}, 200)
	assert.Empty(t, out["__interrupt__"])
	var done agentValues
	raw, _ := json.Marshal(out)
	require.NoError(t, json.Unmarshal(raw, &done))
	assert.Equal(t, "Kept one note.", done.Answer)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"edited"}, written, "the edited call ran, the rejected one did not")
}
