package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
)

// The Agent Server API's threads and runs are in the run store: a research
// run is listed with its question and status (research runs) and its
// report is read back from its thread (research show); a server started
// again on the store lists the threads with their metadata and their runs,
// and a run the server before left running is interrupted.
func TestAgentAPIKeepsThreadsAndRuns(t *testing.T) {
	ts := newTestServer(t, world{})
	th := lgCall[struct {
		ThreadID string `json:"thread_id"`
	}](ts, "POST", "/threads", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200)
	path := "/threads/" + th.ThreadID
	lgCall[json.RawMessage](ts, "POST", path+"/runs/wait", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "What is deep research?"}}}}, 200)
	runs := lgCall[[]lgRun](ts, "GET", path+"/runs", nil, 200)
	require.Len(t, runs, 1)
	done := runs[0]

	// research runs and research show.
	listed, err := ts.store.Runs.List(t.Context(), runstore.ListOptions{})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, done.RunID, listed[0].ID)
	assert.Equal(t, th.ThreadID, listed[0].Thread)
	assert.Equal(t, runstore.KindResearch, listed[0].Kind)
	assert.Equal(t, "What is deep research?", listed[0].Question)
	assert.Equal(t, runstore.StatusDone, listed[0].Status)
	assert.False(t, listed[0].Ended.IsZero())
	stored, err := ts.store.Runs.Get(t.Context(), done.RunID[:8])
	require.NoError(t, err, "found by a prefix of its id, as research show finds it")
	set, err := app.SettingsOf(stored)
	require.NoError(t, err)
	rep, err := app.SavedReport(t.Context(), ts.store.Checkpointer, stored.Thread, set.Backend)
	require.NoError(t, err)
	assert.Contains(t, rep.Markdown(), "## Findings")

	// A run left running by a server that died.
	var rec apiRunSettings
	require.NoError(t, json.Unmarshal(stored.Settings, &rec))
	rec.Record.Status = "running"
	stored.Settings, err = json.Marshal(rec)
	require.NoError(t, err)
	stored.Status = runstore.StatusRunning
	require.NoError(t, ts.store.Runs.Update(t.Context(), stored))

	ts.stop()
	again := startTestServer(t, ts.path, newEngine(world{}))
	found := lgCall[[]struct {
		ThreadID string               `json:"thread_id"`
		Metadata agentserver.Metadata `json:"metadata"`
	}](again, "POST", "/threads/search", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200)
	require.Len(t, found, 1)
	assert.Equal(t, th.ThreadID, found[0].ThreadID)
	assert.JSONEq(t, `"research"`, string(found[0].Metadata["graph_id"]))
	runs = lgCall[[]lgRun](again, "GET", path+"/runs", nil, 200)
	require.Len(t, runs, 1)
	assert.Equal(t, done.RunID, runs[0].RunID)
	assert.Equal(t, "interrupted", runs[0].Status)
	assert.Equal(t, "What is deep research?", runs[0].question(), "its request is kept")
	got, err := again.store.Runs.Get(t.Context(), done.RunID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusInterrupted, got.Status, "and the run store says so")

	// Deleting the thread removes it from the run store.
	status, _, _ := again.do("DELETE", path, nil)
	require.Equal(t, 204, status)
	_, err = again.store.Runs.GetThread(t.Context(), th.ThreadID)
	assert.ErrorIs(t, err, runstore.ErrNotFound)
}

// worldPrices price the world's model: $1000 per million prompt tokens,
// $2000 per million completion tokens.
var worldPrices = llm.Prices{"fake:world": {Input: 1000, Output: 2000, CachedInput: 1000}}

// The Agent Server API's runs are priced with the engine's prices (the
// config file's): their record in the run store has their tokens, calls
// and cost — unknown (nil, never 0) without a price for a model — as the
// timeline's last cost event says.
func TestAgentAPIRunsAreCosted(t *testing.T) {
	// query 100+20, research 500+40, reflection 300+30, answer 900+60
	// tokens: 1800 prompt and 150 completion tokens.
	const researchUSD = 1800*1000/1e6 + 150*2000/1e6
	const agentUSD = 1000*1000/1e6 + 100*2000/1e6
	for _, c := range []struct {
		name, assistant string
		priced          bool
		calls           int
		usd             float64
	}{
		{"research", "research", true, 4, researchUSD},
		{"research without prices", "research", false, 4, 0},
		{"agent", "agent", true, 1, agentUSD},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngine(world{})
			if c.priced {
				eng.prices = worldPrices
			}
			eng.agentScript = fake.New(
				fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(1000, 100))
			ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
			th := ts.newThread()
			evs := ts.lgStream("/threads/"+th.ThreadID+"/runs/stream", map[string]any{"assistant_id": c.assistant,
				"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "How do checkpoints work?"}}}, "stream_mode": "custom"})
			require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
			var last customEvent
			for _, ev := range lgOf(evs, "custom") {
				var ce customEvent
				require.NoError(t, json.Unmarshal(ev.Data, &ce))
				if ce.Type == "cost" {
					last = ce
				}
			}
			runs, err := ts.store.Runs.List(t.Context(), runstore.ListOptions{})
			require.NoError(t, err)
			require.Len(t, runs, 1)
			run := runs[0]
			assert.Equal(t, runstore.StatusDone, run.Status)
			assert.Equal(t, c.calls, run.Calls)
			assert.Equal(t, c.calls, last.Calls)
			assert.Positive(t, run.Tokens)
			assert.EqualValues(t, last.Tokens, run.Tokens)
			if !c.priced {
				assert.Nil(t, run.Cost, "an unknown cost is nil, never 0")
				assert.Nil(t, last.CostUSD)
				return
			}
			require.NotNil(t, run.Cost)
			assert.InDelta(t, c.usd, *run.Cost, 1e-9)
			require.NotNil(t, last.CostUSD)
			assert.InDelta(t, c.usd, *last.CostUSD, 1e-9)
		})
	}
}

// A server stopped while a run of the Agent Server API ran continues it
// at its next start with ResumeInterrupted: its thread gets a run with
// input null that finishes the research.
func TestAgentAPIResumesInterruptedRuns(t *testing.T) {
	ts := newTestServer(t, world{block: "query 1"})
	th := ts.newThread()
	path := "/threads/" + th.ThreadID
	run := lgCall[lgRun](ts, "POST", path+"/runs", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "How do checkpoints work?"}}}}, 200)
	require.Eventually(t, func() bool {
		return lgCall[lgRun](ts, "GET", path+"/runs/"+run.RunID, nil, 200).Status == "running"
	}, 30*time.Second, 10*time.Millisecond)
	ts.stop()

	again := startTestServer(t, ts.path, newEngine(world{}), func(o *Options, _ *testEngine) { o.ResumeInterrupted = true })
	var runs []lgRun
	require.Eventually(t, func() bool {
		runs = lgCall[[]lgRun](again, "GET", path+"/runs", nil, 200)
		return len(runs) == 2 && runs[0].Status == "success"
	}, 30*time.Second, 10*time.Millisecond, "the interrupted run is continued")
	assert.Equal(t, "interrupted", runs[1].Status)
	assert.Nil(t, runs[0].Kwargs.Input, "continued with input null")
	values := again.lgRunValues(runs[0])
	assert.NotEmpty(t, values.Answer)
}

// A run cancelled after a task's search but before its summary is
// continued by a run with input null that does not search again: the
// search it paid for is in the run store, recalled from the thread's runs
// (app.ThreadJournal). Without the journal the continuing run searches
// "query 1" a second time.
func TestAgentAPIContinuedRunDoesNotPayTwice(t *testing.T) {
	ts := newTestServer(t, world{blockSummary: "query 1"})
	th := ts.newThread()
	path := "/threads/" + th.ThreadID
	run := lgCall[lgRun](ts, "POST", path+"/runs", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "How do checkpoints work?"}}}}, 200)
	select {
	case <-ts.eng.model.summaryBlocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the summary of query 1 never started")
	}
	status, _, _ := ts.do("POST", path+"/runs/"+run.RunID+"/cancel?wait=1", nil)
	require.Equal(t, 204, status)
	searched := func(q string) int {
		ts.eng.search.mu.Lock()
		defer ts.eng.search.mu.Unlock()
		n := 0
		for _, s := range ts.eng.search.queries {
			if s == q {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, searched("query 1"))

	ts.eng.model.unblocked.Store(true)
	out := lgCall[map[string]json.RawMessage](ts, "POST", path+"/runs/wait", map[string]any{"assistant_id": "research", "input": nil}, 200)
	assert.Contains(t, string(out["messages"]), "The answer is")
	runs := lgCall[[]lgRun](ts, "GET", path+"/runs", nil, 200)
	require.Len(t, runs, 2)
	assert.Equal(t, "success", runs[0].Status)
	assert.Equal(t, 1, searched("query 1"), "the continuing run searched query 1 again")
}

// stuckWrites is a run store whose next write of a run's record, once
// armed, waits until released (a store stuck in I/O), and which counts
// the reads of runs.
type stuckWrites struct {
	runstore.Store
	mu      sync.Mutex
	armed   bool
	blocked chan struct{}
	release chan struct{}
	gets    atomic.Int64
}

// stick makes the next write wait; the others go through.
func (s *stuckWrites) stick() bool {
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(s.blocked)
		<-s.release
	}
	return armed
}

func (s *stuckWrites) Get(ctx context.Context, id string) (*runstore.Run, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

func (s *stuckWrites) Update(ctx context.Context, r *runstore.Run) error {
	s.stick()
	return s.Store.Update(ctx, r)
}

func (s *stuckWrites) Put(ctx context.Context, r *runstore.Run) error {
	s.stick()
	return s.Store.Put(ctx, r)
}

func (s *stuckWrites) SetSpending(ctx context.Context, id string, tokens int64, calls int, cost *float64) error {
	s.stick()
	return s.Store.SetSpending(ctx, id, tokens, calls, cost)
}

// The writes of a run's record read nothing first and wait for no other
// write: while the write of its spending (its timeline's progress) is
// stuck in the store, the API's write of its status goes through; each
// writes its own columns, so neither undoes the other. (With a lock per
// run held across a read and a write, the status waited for the spending.)
func TestRunRecordWritesDoNotWait(t *testing.T) {
	ctx := context.Background()
	st, err := app.OpenStore(ctx, &config.Config{Store: config.Store(filepath.Join(t.TempDir(), "runs.db"))})
	require.NoError(t, err)
	defer st.Close()
	runs := &stuckWrites{Store: st.Runs, blocked: make(chan struct{}), release: make(chan struct{})}
	defer func() {
		select {
		case <-runs.release:
		default:
			close(runs.release)
		}
	}()
	records := &runStoreRecords{runs: runs}
	now := time.Now().UTC()
	thread := agentserver.ThreadRecord{ID: "0193a5c2-7f00-7000-8000-000000000001", CreatedAt: now, UpdatedAt: now, Status: "idle"}
	require.NoError(t, records.PutThread(ctx, thread))
	rec := agentserver.RunRecord{ID: "0193a5c2-7f00-7000-8000-000000000002", ThreadID: thread.ID, AssistantID: agentserver.AssistantID(graphResearch),
		CreatedAt: now, UpdatedAt: now, Status: "pending", Kwargs: json.RawMessage(`{"input":{"messages":[{"type":"human","content":"q"}]}}`)}
	require.NoError(t, records.PutRun(ctx, rec))

	runs.mu.Lock()
	runs.armed = true
	runs.mu.Unlock()
	progressed := make(chan struct{})
	go func() {
		defer close(progressed)
		records.progress(rec.ID).record(spending{tokens: 42, calls: 3})
	}()
	select {
	case <-runs.blocked:
	case <-time.After(60 * time.Second):
		t.Fatal("the spending was never written")
	}
	rec.Status, rec.UpdatedAt = "running", now.Add(time.Second)
	put := make(chan error, 1)
	go func() { put <- records.PutRun(ctx, rec) }()
	select {
	case err := <-put:
		require.NoError(t, err, "the status is written while the spending's write is stuck")
	case <-time.After(60 * time.Second):
		t.Fatal("the status's write waited for the spending's")
	}
	close(runs.release)
	<-progressed

	got, err := st.Runs.Get(ctx, rec.ID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusRunning, got.Status)
	assert.Equal(t, int64(42), got.Tokens, "the spending stands beside the status")
	assert.Equal(t, 3, got.Calls)
	assert.Zero(t, runs.gets.Load(), "no write read the run first")
}
