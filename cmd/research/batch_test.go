//go:build temporal

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

func TestTemporalParseQuestions(t *testing.T) {
	in := "\ufeff# a comment\n\nWho won the Euro 2024?\r\n   \n  What is Raft?  \n#  another\nWho  won the   Euro 2024?\nWhat is Raft?\nWie funktioniert Raft?\n"
	qs, dups, err := parseQuestions(strings.NewReader(in), temporalresearch.Request{MaxLoops: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{7, 8}, dups, "the same words twice run once")
	require.Len(t, qs, 3)
	for i, want := range []struct {
		line int
		text string
		name string
	}{
		{3, "Who won the Euro 2024?", "001-who-won-the-euro-2024"},
		{5, "What is Raft?", "002-what-is-raft"},
		{9, "Wie funktioniert Raft?", "003-wie-funktioniert-raft"},
	} {
		assert.Equal(t, i+1, qs[i].N)
		assert.Equal(t, want.line, qs[i].Line)
		assert.Equal(t, want.text, qs[i].Request.Question)
		assert.Equal(t, 2, qs[i].Request.MaxLoops, "the per-run settings")
		assert.Equal(t, want.name, qs[i].Name)
		assert.Equal(t, batchID(qs[i].Request), qs[i].ID)
	}

	t.Run("names widen past 999 questions", func(t *testing.T) {
		var b strings.Builder
		for i := range 1000 {
			b.WriteString("question number " + itoa(i) + "\n")
		}
		qs, _, err := parseQuestions(strings.NewReader(b.String()), temporalresearch.Request{})
		require.NoError(t, err)
		assert.Equal(t, "0001-question-number-0", qs[0].Name)
		assert.Equal(t, "1000-question-number-999", qs[999].Name)
	})
	t.Run("a line too long", func(t *testing.T) {
		_, _, err := parseQuestions(strings.NewReader("ok?\n"+strings.Repeat("x", maxQuestion+10)+"\n"), temporalresearch.Request{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "line 2 is longer than 64 KiB")
	})
	t.Run("only comments", func(t *testing.T) {
		qs, _, err := parseQuestions(strings.NewReader("# nothing\n\n"), temporalresearch.Request{})
		require.NoError(t, err)
		assert.Empty(t, qs)
	})
}

func TestTemporalBatchID(t *testing.T) {
	q := temporalresearch.Request{Question: "What is Raft?"}
	id := batchID(q)
	assert.Regexp(t, `^research-batch-[0-9a-f]{16}$`, id)
	// Batches in flight depend on it: changing the derivation makes them
	// run their questions again.
	assert.Equal(t, "research-batch-21bc700eec5a8eb9", id)
	assert.Equal(t, id, batchID(temporalresearch.Request{Question: "What  is Raft?"}), "spacing does not matter")
	assert.Equal(t, id, batchID(q), "deterministic")
	assert.NotEqual(t, id, batchID(temporalresearch.Request{Question: "What is Raft"}))
	assert.NotEqual(t, id, batchID(temporalresearch.Request{Question: "What is Raft?", MaxLoops: 1}), "other settings run anew")
	assert.NotEqual(t, batchID(temporalresearch.Request{Question: "a", MaxLoops: 1}), batchID(temporalresearch.Request{Question: "a", InitialQueries: 1}))
}

func TestTemporalSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Who won the Euro 2024?":      "who-won-the-euro-2024",
		"  --What's   up?!  ":         "what-s-up",
		"Wer ist Torschützenkönig?":   "wer-ist-torschützenkönig",
		"日本の首都は？":                     "日本の首都は",
		"???":                         "question",
		"../../etc/passwd":            "etc-passwd",
		"a|b\\c/d:e*f\"g<h>i\x00j\nk": "a-b-c-d-e-f-g-h-i-j-k",
		strings.Repeat("word ", 30):   "word-word-word-word-word-word-word-word-word",
		strings.Repeat("x", 100):      strings.Repeat("x", maxSlug),
	} {
		got := slug(in)
		assert.Equal(t, want, got, "%q", in)
		assert.LessOrEqual(t, len([]rune(got)), maxSlug)
	}
}

// describe is a DescribeWorkflowExecution answer with status st.
func describe(id, runID string, st enumspb.WorkflowExecutionStatus, start, end time.Time) *workflowservice.DescribeWorkflowExecutionResponse {
	info := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID}, Status: st,
		StartTime: timestamppb.New(start)}
	if !end.IsZero() {
		info.CloseTime = timestamppb.New(end)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}
}

func testBatch(t *testing.T, c client.Client) *batch {
	t.Helper()
	return &batch{c: c, t: app.Temporal{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "q"}, dir: t.TempDir(), file: "questions.txt",
		concurrency: 2, redact: func(s string) string { return strings.ReplaceAll(s, "SECRET", "[redacted]") },
		now: func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }}
}

func question(t *testing.T, n int, text string) batchQuestion {
	t.Helper()
	req := temporalresearch.Request{Question: text}
	return batchQuestion{N: n, Line: n, Request: req, ID: batchID(req), Name: "00" + itoa(n) + "-" + slug(text)}
}

func TestTemporalBatchDecide(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name   string
		resp   *workflowservice.DescribeWorkflowExecutionResponse
		err    error
		act    batchAction
		runID  string
		failed bool
	}{
		{"no run yet", nil, serviceerror.NewNotFound("workflow not found"), actStart, "", false},
		{"running: follow it", describe("w", "r1", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, t0, time.Time{}), nil, actAttach, "r1", false},
		{"completed: fetch it", describe("w", "r2", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, t0, t0), nil, actFetch, "r2", false},
		{"failed: run again", describe("w", "r3", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, t0, t0), nil, actStart, "", false},
		{"cancelled: run again", describe("w", "r4", enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, t0, t0), nil, actStart, "", false},
		{"terminated: run again", describe("w", "r5", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, t0, t0), nil, actStart, "", false},
		{"timed out: run again", describe("w", "r6", enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, t0, t0), nil, actStart, "", false},
		{"continued as new: follow the chain", describe("w", "r7", enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, t0, t0), nil, actAttach, "", false},
		{"the server fails", nil, serviceerror.NewUnavailable("connection refused"), actStart, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mocks.NewClient(t)
			q := question(t, 1, "What is Raft?")
			c.On("DescribeWorkflowExecution", mock.Anything, q.ID, "").Return(tc.resp, tc.err).Once()
			act, runID, err := testBatch(t, c).decide(context.Background(), q)
			if tc.failed {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "looking up run "+q.ID+" on Temporal: ")
				assert.Contains(t, err.Error(), "connection refused")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.act, act)
			assert.Equal(t, tc.runID, runID)
		})
	}
}

// report is a finished research report.
func report(q string) *research.Report {
	return &research.Report{Question: q, Answer: "The answer [1](https://example.com/a).", Gathered: 4,
		Sources: []citation.Source{{Title: "A", URL: "https://example.com/a", Label: "example"}}, Queries: []string{"q1"}, Loops: 1,
		Backend: "search:searxng", Usage: llm.UsageByRole{"answer": {Calls: 2, Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 234, TotalTokens: 1234}}},
		Warnings: []research.Warning{}}
}

// workerModels are the models of the workers of the batch tests, and
// reportCost what report's calls cost with them: 1,000 prompt and 234
// completion tokens of gpt-4.1-mini ($0.40 and $1.60 per million).
var (
	workerModels = map[string]string{"query": "openai:gpt-4.1-mini", "research": "openai:gpt-4.1-mini", "reflection": "openai:gpt-4.1-mini",
		"answer": "openai:gpt-4.1-mini"}
	reportCost = 1000*0.40/1e6 + 234*1.60/1e6
)

// writeKept writes a question's files as an earlier batch would have.
func writeKept(t *testing.T, b *batch, q batchQuestion, rep *research.Report, runErr error) {
	t.Helper()
	require.NoError(t, b.write(q, &temporalresearch.Outcome{Report: rep, Models: workerModels}, runErr))
}

func TestTemporalBatchKept(t *testing.T) {
	b := testBatch(t, nil)
	q := question(t, 1, "What is Raft?")
	_, ok := b.kept(q)
	assert.False(t, ok, "nothing written")

	rep := report(q.Request.Question)
	rep.Timings.Total = 1500 * time.Millisecond
	writeKept(t, b, q, rep, nil)
	row, ok := b.kept(q)
	require.True(t, ok)
	require.NotNil(t, row.CostUSD, "the document's cost")
	assert.InDelta(t, reportCost, *row.CostUSD, 1e-12)
	row.CostUSD = nil
	assert.Equal(t, batchRow{N: 1, Line: 1, Question: "What is Raft?", WorkflowID: q.ID, Status: batchDone, How: howKept, Tokens: 1234,
		DurationMS: 1500, SourcesCited: 1, SourcesGathered: 4, Report: q.Name + ".md", Document: q.Name + ".json"}, row)

	other := q
	other.Request.Question = "What is Paxos?"
	_, ok = b.kept(other)
	assert.False(t, ok, "a file of another question (the file was edited)")

	require.NoError(t, os.Remove(filepath.Join(b.dir, q.Name+".md")))
	_, ok = b.kept(q)
	assert.False(t, ok, "the Markdown report is missing")

	writeKept(t, b, q, rep, errors.New("run failed"))
	_, ok = b.kept(q)
	assert.False(t, ok, "an incomplete report runs again")
}

// workflowRun is a mock run whose result is rep, or err.
func workflowRun(t *testing.T, id, runID string, rep *research.Report, err error) *mocks.WorkflowRun {
	t.Helper()
	r := mocks.NewWorkflowRun(t)
	r.On("GetID").Return(id).Maybe()
	r.On("GetRunID").Return(runID).Maybe()
	r.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		if rep != nil && err == nil {
			*args.Get(1).(**temporalresearch.Outcome) = &temporalresearch.Outcome{Report: rep, Models: workerModels}
		}
	}).Return(err).Maybe()
	return r
}

func TestTemporalBatchRun(t *testing.T) {
	c := mocks.NewClient(t)
	b := testBatch(t, c)
	t0 := time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	qs := []batchQuestion{
		question(t, 1, "kept: written by an earlier batch"),
		question(t, 2, "fetched: completed while the batch was down"),
		question(t, 3, "attached: still running"),
		question(t, 4, "started: never run"),
		question(t, 5, "rerun: failed before"),
		question(t, 6, "fails now, a key in its error"),
		question(t, 7, "terminated"),
		question(t, 8, "timed out"),
	}
	kept := report(qs[0].Request.Question)
	kept.Timings.Total = 2 * time.Second
	writeKept(t, b, qs[0], kept, nil)

	notFound := serviceerror.NewNotFound("not found")
	desc := func(q batchQuestion, runID string, st enumspb.WorkflowExecutionStatus, resp ...*workflowservice.DescribeWorkflowExecutionResponse) {
		c.On("DescribeWorkflowExecution", mock.Anything, q.ID, "").Return(describe(q.ID, runID, st, t0, time.Time{}), nil).Once()
		// The duration of the run, once it has closed.
		c.On("DescribeWorkflowExecution", mock.Anything, q.ID, runID).Return(describe(q.ID, runID, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			t0, t0.Add(time.Duration(q.N)*time.Second)), nil).Maybe()
	}
	desc(qs[1], "run-2", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	c.On("GetWorkflow", mock.Anything, qs[1].ID, "run-2").Return(workflowRun(t, qs[1].ID, "run-2", report(qs[1].Request.Question), nil)).Once()
	desc(qs[2], "run-3", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	c.On("GetWorkflow", mock.Anything, qs[2].ID, "run-3").Return(workflowRun(t, qs[2].ID, "run-3", report(qs[2].Request.Question), nil)).Once()

	var (
		mu      sync.Mutex // the batch starts its runs at once
		started []client.StartWorkflowOptions
	)
	start := func(q batchQuestion, runID string, rep *research.Report, err error) {
		c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == q.ID }),
			temporalresearch.WorkflowName, q.Request).
			Run(func(args mock.Arguments) {
				mu.Lock()
				defer mu.Unlock()
				started = append(started, args.Get(1).(client.StartWorkflowOptions))
			}).
			Return(workflowRun(t, q.ID, runID, nil, nil), nil).Once()
		c.On("GetWorkflow", mock.Anything, q.ID, runID).Return(workflowRun(t, q.ID, runID, rep, err)).Once()
		c.On("DescribeWorkflowExecution", mock.Anything, q.ID, runID).Return(describe(q.ID, runID, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			t0, t0.Add(time.Duration(q.N)*time.Second)), nil).Maybe()
	}
	c.On("DescribeWorkflowExecution", mock.Anything, qs[3].ID, "").Return(nil, notFound).Once()
	start(qs[3], "run-4", report(qs[3].Request.Question), nil)
	desc(qs[4], "run-5-old", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED)
	start(qs[4], "run-5", report(qs[4].Request.Question), nil)
	c.On("DescribeWorkflowExecution", mock.Anything, qs[5].ID, "").Return(nil, notFound).Once()
	incomplete := report(qs[5].Request.Question)
	incomplete.Answer, incomplete.Incomplete = "What was gathered [1](https://example.com/a).", true
	start(qs[5], "run-6", nil, temporal.NewNonRetryableApplicationError(`graph: node "finalize_answer" failed in step 4: openai: SECRET rejected`,
		"deepgraph.ResearchFailed", nil, temporalresearch.Outcome{Report: incomplete, Models: workerModels}))
	c.On("DescribeWorkflowExecution", mock.Anything, qs[6].ID, "").Return(nil, notFound).Once()
	start(qs[6], "run-7", nil, &temporal.TerminatedError{})
	c.On("DescribeWorkflowExecution", mock.Anything, qs[7].ID, "").Return(nil, notFound).Once()
	late := report(qs[7].Request.Question)
	late.Answer, late.Incomplete = "", true
	start(qs[7], "run-8", nil, temporal.NewNonRetryableApplicationError("research: the run took longer than its timeout of 1s",
		"deepgraph.ResearchTimedOut", nil, temporalresearch.Outcome{Report: late, Models: map[string]string{"answer": "compatible:local-llm"}}))

	rows := b.run(context.Background(), qs)
	require.Len(t, rows, 8)
	var hows, statuses []string
	for _, r := range rows {
		hows, statuses = append(hows, r.How), append(statuses, r.Status)
	}
	assert.Equal(t, []string{howKept, howFetched, howAttached, howStarted, howStarted, howStarted, howStarted, howStarted}, hows)
	assert.Equal(t, []string{batchDone, batchDone, batchDone, batchDone, batchDone, batchFailed, batchTerminated, batchTimedOut}, statuses)
	assert.Equal(t, 2000.0, rows[0].DurationMS, "from the kept document")
	for i := 1; i < 6; i++ {
		assert.Equal(t, float64((i+1)*1000), rows[i].DurationMS, "row %d: the run's start to its close on Temporal", i+1)
		assert.Equal(t, 1234, rows[i].Tokens)
		assert.Equal(t, 1, rows[i].SourcesCited)
		assert.Equal(t, 4, rows[i].SourcesGathered)
		assert.Equal(t, qs[i].Name+".md", rows[i].Report)
		assert.FileExists(t, filepath.Join(b.dir, qs[i].Name+".md"))
		if assert.NotNil(t, rows[i].CostUSD, "row %d: priced for the workers' models", i+1) {
			assert.InDelta(t, reportCost, *rows[i].CostUSD, 1e-12)
		}
	}
	assert.Equal(t, "run-5", rows[4].RunID)
	assert.Equal(t, "run "+qs[5].ID+": finalize_answer failed: openai: [redacted] rejected", rows[5].Error)
	assert.Empty(t, rows[6].Report, "a terminated run has no report")
	assert.Equal(t, "run "+qs[6].ID+" was terminated on Temporal", rows[6].Error)
	assert.NoFileExists(t, filepath.Join(b.dir, qs[6].Name+".md"))
	assert.Nil(t, rows[6].CostUSD, "no report, no cost")

	// A run past its --timeout: timed out, its incomplete report written
	// (even without an answer), its cost unknown (a model without a price).
	assert.Equal(t, "run "+qs[7].ID+" took longer than its timeout of 1s", rows[7].Error)
	assert.Equal(t, qs[7].Name+".md", rows[7].Report)
	assert.Nil(t, rows[7].CostUSD)
	assert.Nil(t, b.summary(rows).CostUSD, "one cost unknown: the total is")

	// The failed question's report is written, incomplete, with its error.
	var doc app.ReportDoc
	data, err := os.ReadFile(filepath.Join(b.dir, qs[5].Name+".json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.True(t, doc.Incomplete)
	assert.Equal(t, rows[5].Error, doc.Error)
	assert.Equal(t, workerModels, doc.Models, "the workers' models")
	if assert.NotNil(t, doc.Cost.TotalUSD) {
		assert.InDelta(t, reportCost, *doc.Cost.TotalUSD, 1e-12)
	}
	assert.NotContains(t, string(data), "SECRET")
	md, err := os.ReadFile(filepath.Join(b.dir, qs[5].Name+".md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Incomplete report")
	_, ok := b.kept(qs[5])
	assert.False(t, ok, "it runs again next time")

	// Runs are started on the workers' queue, never twice for a question
	// that completed, attaching to one that runs.
	require.Len(t, started, 5)
	for _, o := range started {
		assert.Equal(t, "q", o.TaskQueue)
		assert.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY, o.WorkflowIDReusePolicy)
		assert.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, o.WorkflowIDConflictPolicy)
	}
	assert.Equal(t, batchCounts{Total: 8, Done: 5, Failed: 3}, countRows(rows))
}

func TestTemporalBatchInterrupted(t *testing.T) {
	c := mocks.NewClient(t)
	b := testBatch(t, c)
	b.concurrency = 1
	qs := []batchQuestion{question(t, 1, "running when stopped"), question(t, 2, "never submitted")}
	c.On("DescribeWorkflowExecution", mock.Anything, qs[0].ID, "").Return(nil, serviceerror.NewNotFound("not found")).Once()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waiting atomic.Bool
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return(qs[0].ID).Maybe()
	run.On("GetRunID").Return("run-1").Maybe()
	run.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		waiting.Store(true)
		<-args.Get(0).(context.Context).Done()
	}).Return(context.Canceled).Once()
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, temporalresearch.WorkflowName, qs[0].Request).Return(run, nil).Once()
	c.On("GetWorkflow", mock.Anything, qs[0].ID, "run-1").Return(run).Once()
	go func() {
		for !waiting.Load() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	rows := b.run(ctx, qs)
	assert.Equal(t, batchRunning, rows[0].Status, "detached: it goes on on Temporal")
	assert.Equal(t, "run-1", rows[0].RunID)
	assert.Equal(t, batchPending, rows[1].Status)
	assert.Equal(t, batchCounts{Total: 2, Running: 1, Pending: 1}, countRows(rows))
	c.AssertNotCalled(t, "CancelWorkflow", mock.Anything, mock.Anything, mock.Anything)
}

func TestTemporalBatchSummary(t *testing.T) {
	b := testBatch(t, nil)
	usd := func(v float64) *float64 { return &v }
	rows := []batchRow{
		{N: 1, Line: 2, Question: "Who | won?", WorkflowID: "research-batch-1", Status: batchDone, How: howStarted, Tokens: 12345, CostUSD: usd(0.0123),
			DurationMS: 42100, SourcesCited: 5, SourcesGathered: 12, Report: "001-who-won.md", Document: "001-who-won.json"},
		{N: 2, Line: 3, Question: "Why?", WorkflowID: "research-batch-2", Status: batchFailed, Error: "run research-batch-2: answer failed: boom",
			Tokens: 100, CostUSD: usd(0.0001), DurationMS: 1000, Report: "002-why.md", Document: "002-why.json"},
		{N: 3, Line: 4, Question: "How?", WorkflowID: "research-batch-3", Status: batchRunning, RunID: "r3"},
		{N: 4, Line: 6, Question: "When?", WorkflowID: "research-batch-4", Status: batchPending},
	}
	s := b.summary(rows)
	require.NoError(t, writeBatchSummary(b.dir, s))
	md, err := os.ReadFile(filepath.Join(b.dir, batchSummaryMD))
	require.NoError(t, err)
	assert.Equal(t, `# Research batch: questions.txt

4 questions · 1 done · 1 failed · 1 running · 1 not submitted · $0.0124 in all — Temporal at 127.0.0.1:7233, namespace default, task queue q; updated 2025-06-01T12:00:00Z

| # | Question | Status | Tokens | Cost | Duration | Sources (cited/gathered) | Report |
|--:|---|---|--:|--:|--:|--:|---|
| 1 | Who \| won? | done | 12,345 | $0.0123 | 42.1s | 5/12 | [001-who-won.md](001-who-won.md) |
| 2 | Why? | failed: run research-batch-2: answer failed: boom | 100 | $0.0001 | 1.0s | 0/0 | [002-why.md](002-why.md) |
| 3 | How? | running |  |  |  |  |  |
| 4 | When? | pending |  |  |  |  |  |
`, string(md))

	rows[1].CostUSD = nil
	assert.Contains(t, summaryMarkdown(b.summary(rows)), "· cost unknown (a model's price is unknown: the config file's prices key gives it) —")
	assert.Contains(t, summaryMarkdown(b.summary(rows)), "| 100 | unknown | 1.0s |")
	rows[1].CostUSD = usd(0.0001)

	var back batchSummary
	data, err := os.ReadFile(filepath.Join(b.dir, batchSummaryJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, batchSummarySchema, back.Schema)
	assert.Equal(t, batchCounts{Total: 4, Done: 1, Failed: 1, Running: 1, Pending: 1}, back.Counts)
	assert.Equal(t, rows, back.Questions)
	assert.Equal(t, "q", back.TaskQueue)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	first := raw["questions"].([]any)[0].(map[string]any)
	assert.InDelta(t, 0.0124, *back.CostUSD, 1e-12)
	for _, k := range []string{"status", "tokens", "cost_usd", "duration_ms", "sources_cited", "sources_gathered", "report", "document", "workflow_id"} {
		assert.Contains(t, first, k)
	}
	entries, err := os.ReadDir(b.dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "no temporary file left: %s", e.Name())
	}
}

func TestTemporalRunFailure(t *testing.T) {
	for _, tc := range []struct {
		err    error
		msg    string
		status string
	}{
		{temporal.NewNonRetryableApplicationError(`graph: node "reflection" failed in step 3 after 3 attempts: openai: timeout`, "deepgraph.ResearchFailed", nil),
			"run w: reflection failed: openai: timeout", batchFailed},
		{temporal.NewApplicationError("temporalresearch: the question is empty", "BadRequest"), "run w failed: temporalresearch: the question is empty", batchFailed},
		{temporal.NewCanceledError(), "run w was cancelled on Temporal", batchCancelled},
		{&temporal.TerminatedError{}, "run w was terminated on Temporal", batchTerminated},
		{temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), "run w timed out on Temporal", batchTimedOut},
		{temporal.NewNonRetryableApplicationError("research: the run took longer than its timeout of 1m30s", "deepgraph.ResearchTimedOut", nil),
			"run w took longer than its timeout of 1m30s", batchTimedOut},
		{errors.New("connection lost"), "run w: connection lost", batchFailed},
	} {
		assert.Equal(t, tc.msg, runFailure("w", tc.err).Error())
		assert.Equal(t, tc.status, failureStatus(tc.err))
	}
}

func TestTemporalRequest(t *testing.T) {
	load := func(t *testing.T, args ...string) *config.Config {
		t.Helper()
		fs := pflag.NewFlagSet("research", pflag.ContinueOnError)
		require.NoError(t, config.AddFlags(fs, researchKeys()...))
		require.NoError(t, fs.Parse(args))
		dir := t.TempDir()
		cfg, err := config.Loader{Flags: fs, UserConfigDir: func() (string, error) { return dir, nil }}.Load()
		require.NoError(t, err)
		return cfg
	}
	assert.Equal(t, temporalresearch.Request{Question: "q"}, request(load(t), "q"), "the workers' configuration decides")
	assert.Equal(t, temporalresearch.Request{Question: "q", MaxLoops: 4}, request(load(t, "--loops", "4"), "q"))
	assert.Equal(t, temporalresearch.Request{Question: "q", InitialQueries: 1, MaxLoops: 1}, request(load(t, "--effort", "low"), "q"))
	assert.Equal(t, temporalresearch.Request{Question: "q", InitialQueries: 2, MaxLoops: 10}, request(load(t, "--effort", "high", "--queries", "2"), "q"))
	assert.Equal(t, temporalresearch.Request{Question: "q", Timeout: 90 * time.Second}, request(load(t, "--timeout", "90s"), "q"), "the workers enforce the client's timeout")
	assert.Equal(t, batchID(temporalresearch.Request{Question: "q"}), batchID(request(load(t, "--timeout", "90s"), "q")),
		"a batch's timeout does not change its runs: a question answered within any timeout is not run again")
}

func TestTemporalModelList(t *testing.T) {
	assert.Equal(t, "openai:gpt-4.1-mini", modelList(map[string]string{"query": "openai:gpt-4.1-mini", "research": "openai:gpt-4.1-mini",
		"reflection": "openai:gpt-4.1-mini", "answer": "openai:gpt-4.1-mini"}), "one model for every role, named once")
	assert.Equal(t, "openai:gpt-4.1-mini, openai:gpt-4.1, anthropic:claude-haiku-4-5", modelList(map[string]string{
		"answer": "openai:gpt-4.1", "query": "openai:gpt-4.1-mini", "research": "openai:gpt-4.1-mini", "reflection": "openai:gpt-4.1-mini",
		"compaction": "anthropic:claude-haiku-4-5"}), "in the roles' order, then the other roles")
	assert.Empty(t, modelList(nil))
}
