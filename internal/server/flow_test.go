package server

import (
	"context"
	"encoding/json"
	"github.com/deepgraph/deepgraph/graph"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
)

func queueOf(running, size int) serverOption {
	return func(o *Options, _ *testEngine) { o.MaxRunning, o.QueueSize = running, size }
}

// Threads: created, listed newest first in pages, read, deleted with their
// runs and checkpoints — not while a run is in progress.
func TestThreads(t *testing.T) {
	ts := newTestServer(t, world{})
	var ids []string
	for range 5 {
		ids = append(ids, call[Thread](ts, "POST", "/threads", map[string]any{}, 201).ID)
		time.Sleep(2 * time.Millisecond)
	}
	page := call[ThreadList](ts, "GET", "/threads?limit=2", nil, 200)
	require.Len(t, page.Threads, 2)
	assert.Equal(t, ids[4], page.Threads[0].ID, "newest first")
	require.NotNil(t, page.NextOffset)
	assert.Equal(t, 2, *page.NextOffset)
	last := call[ThreadList](ts, "GET", "/threads?limit=2&offset=4", nil, 200)
	require.Len(t, last.Threads, 1)
	assert.Nil(t, last.NextOffset, "the last page")
	assert.Equal(t, ids[0], last.Threads[0].ID)

	status, data, _ := ts.do("GET", "/threads/nope", nil)
	assert.Equal(t, 404, status)
	assert.Contains(t, string(data), `"code":"not_found"`)
	empty := call[ThreadDetail](ts, "GET", "/threads/"+ids[0], nil, 200)
	assert.Equal(t, ThreadIdle, empty.Status)
	assert.Equal(t, "null", string(empty.Values))
	assert.Empty(t, call[History](ts, "GET", "/threads/"+ids[0]+"/history", nil, 200).Checkpoints)

	run := call[Run](ts, "POST", "/threads/"+ids[1]+"/runs", RunRequest{Input: "q"}, 202)
	ts.waitRun(run, runstore.StatusDone)
	require.NotEmpty(t, call[History](ts, "GET", "/threads/"+ids[1]+"/history", nil, 200).Checkpoints)
	status, _, _ = ts.do("DELETE", "/threads/"+ids[1], nil)
	assert.Equal(t, 204, status)
	status, _, _ = ts.do("GET", "/threads/"+ids[1], nil)
	assert.Equal(t, 404, status)
	status, _, _ = ts.do("GET", "/threads/"+ids[1]+"/runs/"+run.ID, nil)
	assert.Equal(t, 404, status, "its runs went with it")
	_, err := ts.store.Checkpointer.Get(context.Background(), graph.Thread(ids[1]))
	assert.Error(t, err, "and its checkpoints")
	status, _, _ = ts.do("DELETE", "/threads/"+ids[1], nil)
	assert.Equal(t, 404, status)

	blocked := newTestServer(t, world{block: "query 1"})
	r := blocked.ask(RunRequest{Input: "q"})
	blocked.waitRun(r, runstore.StatusRunning)
	status, data, _ = blocked.do("DELETE", "/threads/"+r.ThreadID, nil)
	assert.Equal(t, 409, status)
	assert.Contains(t, string(data), "cancel it first")
}

// Runs are listed per thread (oldest first) and across threads (newest
// first); a run is found only under its own thread.
func TestRunLists(t *testing.T) {
	ts := newTestServer(t, world{})
	a := ts.ask(RunRequest{Input: "first question"})
	ts.waitRun(a, runstore.StatusDone)
	follow := call[Run](ts, "POST", "/threads/"+a.ThreadID+"/runs", RunRequest{Input: "and a follow-up?"}, 202)
	ts.waitRun(follow, runstore.StatusDone)
	b := ts.ask(RunRequest{Input: "another thread"})
	ts.waitRun(b, runstore.StatusDone)

	thread := call[RunList](ts, "GET", "/threads/"+a.ThreadID+"/runs", nil, 200)
	require.Len(t, thread.Runs, 2)
	assert.Equal(t, []string{a.ID, follow.ID}, []string{thread.Runs[0].ID, thread.Runs[1].ID})
	all := call[RunList](ts, "GET", "/runs?limit=2", nil, 200)
	require.Len(t, all.Runs, 2)
	assert.Equal(t, b.ID, all.Runs[0].ID)
	require.NotNil(t, all.NextOffset)
	status, _, _ := ts.do("GET", "/threads/"+b.ThreadID+"/runs/"+a.ID, nil)
	assert.Equal(t, 404, status, "a run under another thread")
	status, _, _ = ts.do("GET", "/threads/"+a.ThreadID+"/runs/"+a.ID[:5], nil)
	assert.Equal(t, 404, status, "ids are exact in the API")
	th := call[ThreadDetail](ts, "GET", "/threads/"+a.ThreadID, nil, 200)
	assert.Equal(t, 2, th.RunCount)
	assert.Equal(t, "first question", th.Title)
}

// The queue: at most MaxRunning run, QueueSize wait, more get 429 with
// Retry-After; a thread takes one run at a time.
func TestQueueBound(t *testing.T) {
	ts := newTestServer(t, world{block: "query 1"}, queueOf(1, 1))
	first := ts.ask(RunRequest{Input: "one"})
	ts.waitRun(first, runstore.StatusRunning)
	second := ts.ask(RunRequest{Input: "two"})
	assert.Equal(t, runstore.StatusQueued, second.Status)
	th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
	status, data, hdr := ts.do("POST", "/threads/"+th.ID+"/runs", RunRequest{Input: "three"})
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Contains(t, string(data), `"code":"rate_limited"`)
	secs, err := strconv.Atoi(hdr.Get("Retry-After"))
	require.NoError(t, err)
	assert.Positive(t, secs)
	health := call[Health](ts, "GET", "/healthz", nil, 200)
	assert.Equal(t, Health{Status: "ok", Running: 1, Queued: 1}, health)

	status, data, _ = ts.do("POST", "/threads/"+first.ThreadID+"/runs", RunRequest{Input: "again"})
	assert.Equal(t, http.StatusConflict, status, "one run at a time per thread")
	assert.Contains(t, string(data), "in progress")

	// Cancelling the waiting run frees its place, without running it.
	got := call[Run](ts, "POST", "/threads/"+second.ThreadID+"/runs/"+second.ID+"/cancel", nil, 202)
	assert.Equal(t, runstore.StatusInterrupted, got.Status)
	call[Run](ts, "POST", "/threads/"+th.ID+"/runs", RunRequest{Input: "three"}, 202)
	// Cancelling the running one stops it; it can be resumed.
	call[Run](ts, "POST", "/threads/"+first.ThreadID+"/runs/"+first.ID+"/cancel", nil, 202)
	stopped := ts.waitRun(first, runstore.StatusInterrupted)
	assert.Equal(t, "cancelled", stopped.Error)
	status, _, _ = ts.do("POST", "/threads/"+first.ThreadID+"/runs/"+first.ID+"/cancel", nil)
	assert.Equal(t, http.StatusConflict, status, "nothing left to cancel")
	assert.LessOrEqual(t, ts.srv.Peak(), 1)
}

// A cancelled run resumes where it stopped: the searches that finished are
// not made again.
func TestCancelAndResume(t *testing.T) {
	eng := newEngine(world{queries: 2, block: "query 2"})
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Input: "q", Effort: "medium"})
	require.Eventually(t, func() bool { return countQuery(eng.search, "query 1") == 1 && countQuery(eng.search, "query 2") == 1 },
		10*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // query 1's research is stored
	call[Run](ts, "POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/cancel", nil, 202)
	ts.waitRun(run, runstore.StatusInterrupted)

	status, data, _ := ts.do("POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{"answer": "ok"})
	assert.Equal(t, 400, status, "an interrupted run takes no answer")
	assert.Contains(t, string(data), "waits for no answer")
	eng.search.w.block = ""
	call[Run](ts, "POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{}, 202)
	done := ts.waitRun(run, runstore.StatusDone)
	assert.Equal(t, 1, countQuery(eng.search, "query 1"), "the finished search was not made again")
	assert.Equal(t, 2, countQuery(eng.search, "query 2"), "the cancelled one was")
	var rep struct{ Sources []struct{ URL string } }
	require.NoError(t, json.Unmarshal(done.Report, &rep))
	assert.Len(t, rep.Sources, 4)
	status, _, _ = ts.do("POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{})
	assert.Equal(t, http.StatusConflict, status, "a done run is not resumed")
}

func countQuery(s *worldSearch, q string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.queries {
		if x == q {
			n++
		}
	}
	return n
}

// Review mode over HTTP: the run pauses with the queries it is about to
// search; the answer edits them; the run goes on with the edited ones.
func TestReview(t *testing.T) {
	eng := newEngine(world{queries: 2})
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Input: "q", Effort: "medium", Review: true})
	paused := ts.waitRun(run, runstore.StatusNeedsInput)
	require.NotNil(t, paused.Interrupt)
	assert.Equal(t, InterruptReview, paused.Interrupt.Kind)
	require.NotNil(t, paused.Interrupt.Review)
	assert.Equal(t, []string{"query 1", "query 2"}, paused.Interrupt.Review.Queries)
	assert.Equal(t, research.ReviewInitial, paused.Interrupt.Review.Stage)
	th := call[Thread](ts, "GET", "/threads/"+run.ThreadID, nil, 200)
	assert.Equal(t, ThreadNeedsInput, th.Status)

	status, data, _ := ts.do("POST", "/threads/"+run.ThreadID+"/runs", RunRequest{Input: "another"})
	assert.Equal(t, http.StatusConflict, status, "the thread waits for an answer")
	assert.Contains(t, string(data), "waits for an answer")
	status, data, _ = ts.do("POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{})
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "waits for an answer")
	status, data, _ = ts.do("POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{"answer": map[string]any{"querys": []string{"x"}}})
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "not a review answer")

	call[Run](ts, "POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume",
		map[string]any{"answer": map[string]any{"queries": []string{"edited query"}}}, 202)
	ts.waitRun(run, runstore.StatusDone)
	assert.Equal(t, 1, countQuery(eng.search, "edited query"))
	assert.Zero(t, countQuery(eng.search, "query 1"), "the proposed queries were replaced")

	// The stream has the interrupt, then the rest.
	resp := ts.stream(context.Background(), run, 0)
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body, nil)
	types := make([]string, 0, len(evs))
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	i := slices.Index(types, EventInterrupt)
	require.GreaterOrEqual(t, i, 0)
	assert.Contains(t, types[i:], EventReport)
	assert.Equal(t, EventEnd, types[len(types)-1])
}

// An agent run whose agent asks a question waits for the answer over HTTP.
func TestAgentQuestion(t *testing.T) {
	eng := newEngine(world{})
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("ask_human", map[string]string{"question": "Which year?"})),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done for **2024**."})).When(fake.AnyContains("2024")),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Kind: "agent", Input: "Summarise the year"})
	paused := ts.waitRun(run, runstore.StatusNeedsInput)
	require.NotNil(t, paused.Interrupt)
	assert.Equal(t, Interrupt{Kind: InterruptQuestion, Question: "Which year?"}, *paused.Interrupt)
	status, _, _ := ts.do("POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{"answer": map[string]any{"x": 1}})
	assert.Equal(t, 400, status, "an agent's answer is text")
	call[Run](ts, "POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{"answer": "2024"}, 202)
	done := ts.waitRun(run, runstore.StatusDone)
	var doc struct{ Answer, Status string }
	require.NoError(t, json.Unmarshal(done.Report, &doc))
	assert.Equal(t, "Done for **2024**.", doc.Answer)
	assert.Equal(t, "success", doc.Status)

	resp := ts.stream(context.Background(), run, 0)
	defer resp.Body.Close()
	var kinds []string
	for _, ev := range readSSE(t, resp.Body, nil) {
		if ev.Type == EventActivity {
			var a Activity
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &a))
			kinds = append(kinds, a.Kind)
		}
	}
	assert.Equal(t, []string{"agent_think", "agent_act", "agent_think", "agent_act", "agent_done"}, kinds)
	status, _, _ = ts.do("POST", "/threads/"+run.ThreadID+"/runs", RunRequest{Input: "more"})
	assert.Equal(t, http.StatusConflict, status, "an agent thread takes one task")
}
