//go:build temporal

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

// End to end on a real Temporal server: a research worker and clients, the
// built binary, against the fake OpenAI, SearXNG and web pages. They run
// only when DEEPGRAPH_TEMPORAL_ADDRESS names a server's frontend, e.g.
//
//	(cd scripts/temporal-dev && go run . --port 7233) &
//	DEEPGRAPH_TEMPORAL_ADDRESS=127.0.0.1:7233 go test ./cmd/research -run Temporal
//
// Each test has a task queue of its own and questions carrying a random
// mark, so runs of the tests never meet earlier runs' workflows.

// temporalAddress is the server's address, or skips the test.
func temporalAddress(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("DEEPGRAPH_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("DEEPGRAPH_TEMPORAL_ADDRESS is not set: this test needs a Temporal server " +
			"(cd scripts/temporal-dev && go run . --port 7233; then DEEPGRAPH_TEMPORAL_ADDRESS=127.0.0.1:7233)")
	}
	return addr
}

// mark is a random word that makes a test's questions and queue its own.
func mark(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// temporalFake is the fake OpenAI of the Temporal tests: the search
// research script, but a question with FAIL fails at the answer while
// failing is on, one with HANG waits at the reflection until released
// (or its caller goes), and the first reflection on a question with GAP
// finds a gap ("raft term numbers" to search).
type temporalFake struct {
	*fakeOpenAI
	failing atomic.Bool
	gapped  atomic.Bool
	hanging atomic.Int32 // HANG calls waiting
	mu      sync.Mutex
	release chan struct{}
}

func newTemporalFake(t *testing.T) (*temporalFake, map[string]string, *fakeSearXNG) {
	t.Helper()
	web, _ := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	f := &temporalFake{release: make(chan struct{})}
	f.failing.Store(true)
	base := searchResearchScript()
	f.fakeOpenAI = newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		switch {
		case strings.Contains(p, "HANG") && c.req.schema() == "Reflection":
			f.mu.Lock()
			release := f.release
			f.mu.Unlock()
			f.hanging.Add(1)
			defer f.hanging.Add(-1)
			select {
			case <-release:
			case <-c.r.Context().Done():
				return oaReply{Hang: true}
			}
		case strings.Contains(p, "GAP") && c.req.schema() == "Reflection" && f.gapped.CompareAndSwap(false, true):
			return oaReply{Content: `{"is_sufficient": false, "knowledge_gap": "The term numbers are missing.", "follow_up_queries": ["raft term numbers"]}`}
		case strings.Contains(p, "FAIL") && f.failing.Load() && c.req.schema() == "" && !strings.Contains(p, `<source label="S`):
			return oaReply{Status: http.StatusBadRequest, ErrBody: `{"error":{"message":"This model's maximum context length is exceeded","type":"invalid_request_error","code":"context_length_exceeded"}}`}
		}
		return base(c)
	})
	vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": f.baseURL(), "SEARXNG_URL": sx.srv.URL}
	return f, vars, sx
}

// unhang releases the HANG questions.
func (f *temporalFake) unhang() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release)
}

// startWorker starts research worker on queue with the fakes' keys and
// waits for its ready line; the test's end stops it.
func startWorker(t *testing.T, addr, queue string, vars map[string]string, extra ...string) *started {
	t.Helper()
	args := append([]string{"worker", "--temporal", addr, "--task-queue", queue, "--model", "openai:gpt-4.1-mini", "--allow-private-urls"}, extra...)
	w := startBin(t, env(t, vars), args...)
	w.waitStderr(t, "Worker ready", 30*time.Second)
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			w.wait(t, 60*time.Second)
		}
	})
	return w
}

// sdkClient is a Temporal client for the tests' own checks.
func sdkClient(t *testing.T, addr string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, DataConverter: temporalgraph.DataConverter(&temporalgraph.Codec{})})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// waitStatus waits until workflow id has status want.
func waitStatus(t *testing.T, c client.Client, id string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	var got enumspb.WorkflowExecutionStatus
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
		if err == nil {
			if got = d.GetWorkflowExecutionInfo().GetStatus(); got == want {
				return
			}
		}
	}
	t.Fatalf("workflow %s is %s, not %s, after 60s", id, got, want)
}

func TestE2ETemporalRun(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-run-" + m
	oa, vars, sx := newTemporalFake(t)
	w := startWorker(t, addr, queue, vars)
	assert.Contains(t, w.stderr.String(), "namespace default, task queue "+queue)
	assert.Contains(t, w.stderr.String(), "Researching the web with searxng using openai:gpt-4.1-mini")
	assert.NotContains(t, w.stderr.String(), openaiKey)

	// The client has no model key: the workers do the work.
	client := env(t, nil)
	t.Run("markdown report with the live timeline", func(t *testing.T) {
		res := run(t, client, "--temporal", addr, "--task-queue", queue, "--loops", "1", "How does Raft elect a leader? "+m)
		require.Equal(t, 0, res.code, res)
		assertCitations(t, res.stdout, sx.returned())
		assertInOrder(t, res.stderr,
			"Run research-", "on Temporal at "+addr+" (namespace default, task queue "+queue+")",
			"Generating search queries",
			`Queries: "raft leader election" · "raft log replication"`,
			"Reflection 1: sufficient",
			"Finalizing the answer",
			"Answer: ",
			"Done in ")
		assert.Contains(t, res.stderr, `Searched "raft leader election": 3 sources (127.0.0.1)`)
		// The workers' models, and the cost at the client's prices.
		assertInOrder(t, res.stderr, "Models (on the workers): openai:gpt-4.1-mini", "Done in ")
		assert.Regexp(t, `Done in .* · \$0\.\d{4}\n`, res.stderr)
		timelineLines(t, res.stderr)
		assert.NotContains(t, res.all(), openaiKey)
	})
	t.Run("json document to a file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report.json")
		res := run(t, client, "--temporal", addr, "--task-queue", queue, "--format", "json", "-o", out, "-q", "What is Raft? "+m)
		require.Equal(t, 0, res.code, res)
		assert.Empty(t, res.stdout)
		assert.Empty(t, res.stderr, "quiet")
		var doc app.ReportDoc
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &doc))
		assert.Equal(t, app.ReportSchema, doc.Schema)
		assert.Equal(t, "What is Raft? "+m, doc.Question)
		assert.True(t, strings.HasPrefix(doc.RunID, "research-"), "the document names the run's workflow: %q", doc.RunID)
		assert.False(t, doc.Incomplete)
		assert.NotEmpty(t, doc.Sources)
		assert.Positive(t, doc.UsageTotal.TotalTokens)
		assert.Positive(t, doc.Timings.TotalMS, "the run's duration on Temporal")
		// The workers' models, priced at the client's prices.
		for _, role := range app.Roles {
			assert.Equal(t, "openai:gpt-4.1-mini", doc.Models[role], "role %s", role)
		}
		require.NotNil(t, doc.Cost.TotalUSD, "gpt-4.1-mini has a price")
		assert.Positive(t, *doc.Cost.TotalUSD)
		assert.Equal(t, "openai:gpt-4.1-mini", doc.Cost.ByRole["answer"].Model)
		assert.Empty(t, doc.Cost.Unknown)
	})
	t.Run("the client's prices price the run", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte("prices:\n  openai:gpt-4.1-mini: {input: 1000000, output: 0}\n"), 0o600))
		res := run(t, client, "--config", cfg, "--temporal", addr, "--task-queue", queue, "--format", "json", "-q", "What is a Raft log? "+m)
		require.Equal(t, 0, res.code, res)
		var doc app.ReportDoc
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		require.NotNil(t, doc.Cost.TotalUSD)
		assert.Equal(t, float64(doc.UsageTotal.PromptTokens), *doc.Cost.TotalUSD, "a dollar a prompt token, as the client's config file says")
	})
	t.Run("--timeout stops the run on the workers with its incomplete report", func(t *testing.T) {
		res := run(t, client, "--temporal", addr, "--task-queue", queue, "--timeout", "4s", "--format", "json", "HANG at the reflection, timed "+m)
		require.Equal(t, 1, res.code, "exit status 1, as a local --timeout: %s", res)
		assert.Contains(t, res.stderr, "did not finish within the timeout of 4s (timeout); the report above is incomplete")
		assert.Contains(t, res.stderr, "Stopped (incomplete)")
		var doc app.ReportDoc
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		assert.True(t, doc.Incomplete)
		assert.Equal(t, "timed out after 4s", doc.Error, "as a local run's document")
		assert.NotEmpty(t, doc.Sources, "what it had gathered")
		assert.Equal(t, "openai:gpt-4.1-mini", doc.Models["answer"])
	})
	t.Run("a failed run prints its incomplete report and exits 1", func(t *testing.T) {
		res := run(t, client, "--temporal", addr, "--task-queue", queue, "--format", "json", "FAIL at the answer "+m)
		require.Equal(t, 1, res.code, res)
		var doc app.ReportDoc
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		assert.True(t, doc.Incomplete)
		assert.Contains(t, doc.Error, "failed")
		assert.Contains(t, res.stderr, "Stopped (incomplete)")
		assert.Contains(t, res.stderr, "research: run research-")
	})
	t.Run("Ctrl-C cancels the run on Temporal and prints its incomplete report", func(t *testing.T) {
		p := startBin(t, client, "--temporal", addr, "--task-queue", queue, "HANG at the reflection "+m)
		p.waitStderr(t, "Searched ", 30*time.Second)
		require.Eventually(t, func() bool { return oa.hanging.Load() > 0 }, 30*time.Second, 10*time.Millisecond, "the run reached its reflection")
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		res := p.wait(t, 30*time.Second)
		require.Equal(t, exitInterrupted, res.code, res)
		assert.Contains(t, res.stderr, "is cancelled on Temporal")
		// The report is printed only when it came within cancelWait.
		assert.NotContains(t, res.stderr, "its report did not come")
		assert.Contains(t, res.stdout, "**Incomplete report.**", "as a local Ctrl-C")
		assertCitations(t, res.stdout, sx.returned())
		assertInOrder(t, res.stderr, "Cancelling run research-", "Stopped (incomplete)", "research: interrupted: run research-")
		id := strings.Fields(strings.SplitN(res.stderr, "Run ", 2)[1])[0]
		waitStatus(t, sdkClient(t, addr), id, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
	})
	t.Run("the worker stops gracefully", func(t *testing.T) {
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
		res := w.wait(t, 60*time.Second)
		assert.Equal(t, 0, res.code, res)
		assertInOrder(t, res.stderr, "Stopping: no new tasks", "Stopped")
	})
}

func TestE2ETemporalRefusals(t *testing.T) {
	t.Parallel()
	// No server needed: the flags are refused before any connection.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--temporal", "127.0.0.1:7233", "--thread", "abc", "q?"}, "--thread is not available with --temporal"},
		{[]string{"--temporal", "127.0.0.1:7233", "--store", "off", "q?"}, "--store does not apply with --temporal"},
		{[]string{"--temporal", "127.0.0.1:7233", "-m", "openai:gpt-4.1", "q?"}, "--model configures the workers: set it where research worker runs (flag, DEEPGRAPH_MODEL or the config file's model)"},
		{[]string{"--temporal", "localhost", "q?"}, `--temporal "localhost" is not HOST:PORT`},
		{[]string{"--temporal", "localhost:7233", "--task-queue", "", "q?"}, "--task-queue is empty"},
		{[]string{"--temporal", "localhost:7233", "--blob-dir", "/no/such/dir", "q?"}, "--blob-dir /no/such/dir: no such file or directory"},
		{[]string{"--namespace", "x", "q?"}, "--namespace is a setting of runs on Temporal: add --temporal HOST:PORT"},
		{[]string{"worker"}, "research worker needs the Temporal server: --temporal HOST:PORT"},
		{[]string{"worker", "--temporal", "localhost:7233", "--format", "json"}, "--format does not apply to a worker"},
		{[]string{"worker", "--temporal", "localhost:7233", "--concurrency", "0"}, "--concurrency 0: use a whole number from 1 to 100000"},
		{[]string{"worker", "--temporal", "localhost:7233", "--heartbeat", "0s"}, "--heartbeat 0s: use a duration from 100ms to 10m0s"},
		{[]string{"worker", "--temporal", "localhost:7233", "--timeout", "1m"}, "--timeout does not apply to a worker: the client sets each run's time limit"},
		{[]string{"worker", "--temporal", "localhost:7233", "--max-cost", "0.5"}, "max_cost (flag --max-cost) limits what one run spends, and a worker's runs would share it"},
		{[]string{"batch", "q.txt", "--out", "x"}, "research batch runs on Temporal: give its address with --temporal HOST:PORT"},
		{[]string{"batch", "q.txt", "--temporal", "localhost:7233"}, "research batch needs --out DIR"},
		{[]string{"batch", "--temporal", "localhost:7233", "--out", "x"}, "research batch takes one FILE of questions"},
		{[]string{"batch", "q.txt", "--temporal", "localhost:7233", "--out", "x", "--format", "json"}, "--format does not apply to research batch"},
		{[]string{"batch", "q.txt", "--temporal", "localhost:7233", "--out", "x", "--search", "tavily"}, "--search configures the workers"},
		{[]string{"batch", "q.txt", "--temporal", "localhost:7233", "--out", "x", "--review"}, "--review does not apply to research batch: nobody is there to answer a batch's reviews"},
		{[]string{"batch", "/no/such/file.txt", "--temporal", "localhost:7233", "--out", "x"}, "research batch /no/such/file.txt: no such file or directory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			res := run(t, env(t, nil), tc.args...)
			assert.Equal(t, exitUsage, res.code, res)
			assert.Contains(t, res.stderr, tc.want)
			assert.Empty(t, res.stdout)
		})
	}
	t.Run("several refused flags are named together", func(t *testing.T) {
		res := run(t, env(t, nil), "--temporal", "localhost:7233", "--thread", "abc", "--search", "tavily", "q?")
		assert.Equal(t, exitUsage, res.code, res)
		assert.Contains(t, res.stderr, "research: --thread")
		assert.Contains(t, res.stderr, "research: --search")
	})
	t.Run("--review and --timeout travel with the run", func(t *testing.T) {
		res := run(t, env(t, nil), "--temporal", "127.0.0.1:1", "--review", "--timeout", "1m", "q?")
		assert.Equal(t, exitFailed, res.code, res)
		assert.Contains(t, res.stderr, "cannot reach Temporal at 127.0.0.1:1", "accepted, then the connection failed")
	})
	t.Run("no server there", func(t *testing.T) {
		res := run(t, env(t, nil), "--temporal", "127.0.0.1:1", "q?")
		assert.Equal(t, exitFailed, res.code, res)
		assert.Contains(t, res.stderr, "cannot reach Temporal at 127.0.0.1:1")
		assert.Contains(t, res.stderr, "is a Temporal server running there?")
	})
}

// readSummary reads a batch's summary.json.
func readSummary(t *testing.T, dir string) batchSummary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, batchSummaryJSON))
	require.NoError(t, err)
	var s batchSummary
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

// hows are the summary's how per question.
func hows(s batchSummary) []string {
	var out []string
	for _, r := range s.Questions {
		out = append(out, r.How)
	}
	return out
}

func TestE2ETemporalBatch(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-batch-" + m
	oa, vars, _ := newTemporalFake(t)
	startWorker(t, addr, queue, vars)
	dir := t.TempDir()
	out := filepath.Join(dir, "reports")
	file := filepath.Join(dir, "questions.txt")
	require.NoError(t, os.WriteFile(file, []byte("# Raft, "+m+"\n\nHow does Raft elect a leader? "+m+"\n  What is a Raft term? "+m+"  \n"+
		"How does Raft elect a leader? "+m+"\nFAIL at the answer "+m+"\n"), 0o600))
	client := env(t, nil)
	args := []string{"batch", file, "--temporal", addr, "--task-queue", queue, "--out", out, "--loops", "1", "--concurrency", "2"}

	// First pass: two done, one failed (its incomplete report written).
	res := run(t, client, args...)
	require.Equal(t, exitFailed, res.code, res)
	assert.Contains(t, res.stderr, "Batch of 3 questions")
	assert.Contains(t, res.stderr, "asked twice, run once: line 5")
	assert.Contains(t, res.stderr, "1 of 3 questions failed")
	s := readSummary(t, out)
	assert.Equal(t, batchCounts{Total: 3, Done: 2, Failed: 1}, s.Counts)
	assert.Equal(t, []string{howStarted, howStarted, howStarted}, hows(s))
	names := []string{"001-how-does-raft-elect-a-leader-" + m, "002-what-is-a-raft-term-" + m, "003-fail-at-the-answer-" + m}
	for i, r := range s.Questions {
		assert.Equal(t, names[i]+".md", r.Report)
		assert.FileExists(t, filepath.Join(out, names[i]+".md"))
		assert.FileExists(t, filepath.Join(out, names[i]+".json"))
		assert.Positive(t, r.Tokens)
		assert.Positive(t, r.DurationMS)
		assert.Equal(t, batchID(temporalresearch.Request{Question: r.Question, MaxLoops: 1}), r.WorkflowID)
	}
	assert.Equal(t, batchFailed, s.Questions[2].Status)
	assert.Positive(t, s.Questions[0].SourcesCited)
	md, err := os.ReadFile(filepath.Join(out, batchSummaryMD))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| 1 | How does Raft elect a leader? "+m+" | done |")
	assert.Contains(t, string(md), "| 3 | FAIL at the answer "+m+" | failed: ")

	// Second pass, the failure mended: the done ones are kept, the failed
	// one runs again.
	oa.failing.Store(false)
	calls := oa.count()
	res = run(t, client, args...)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stderr, "2 reports already in "+out+": skipped")
	s = readSummary(t, out)
	assert.Equal(t, batchCounts{Total: 3, Done: 3}, s.Counts)
	assert.Equal(t, []string{howKept, howKept, howStarted}, hows(s))
	assert.Greater(t, oa.count(), calls, "the failed question ran again")

	// A report lost while its run completed: fetched, not run again.
	require.NoError(t, os.Remove(filepath.Join(out, names[0]+".json")))
	calls = oa.count()
	res = run(t, client, args...)
	require.Equal(t, 0, res.code, res)
	s = readSummary(t, out)
	assert.Equal(t, []string{howFetched, howKept, howKept}, hows(s))
	assert.Equal(t, calls, oa.count(), "no model call")
	assert.FileExists(t, filepath.Join(out, names[0]+".json"))
	assert.NotContains(t, res.all(), openaiKey)
}

func TestE2ETemporalBatchDetachAndAttach(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-attach-" + m
	oa, vars, _ := newTemporalFake(t)
	startWorker(t, addr, queue, vars)
	dir := t.TempDir()
	out := filepath.Join(dir, "reports")
	file := filepath.Join(dir, "questions.txt")
	require.NoError(t, os.WriteFile(file, []byte("What is Raft? "+m+"\nHANG at the reflection "+m+"\n"), 0o600))
	client := env(t, nil)
	args := []string{"batch", file, "--temporal", addr, "--task-queue", queue, "--out", out}

	p := startBin(t, client, args...)
	p.waitStderr(t, "[1/2] done", 60*time.Second)
	require.Eventually(t, func() bool { return oa.hanging.Load() > 0 }, 30*time.Second, 10*time.Millisecond, "the HANG question reached its reflection")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t, 30*time.Second)
	require.Equal(t, exitInterrupted, res.code, res)
	assert.Contains(t, res.stderr, "1 run goes on on Temporal")
	assert.Contains(t, res.stderr, "Run the same command again to pick up")
	s := readSummary(t, out)
	assert.Equal(t, batchCounts{Total: 2, Done: 1, Running: 1}, s.Counts)
	id := s.Questions[1].WorkflowID
	d, err := sdkClient(t, addr).DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "detached, not cancelled")

	// Started again: the running run is followed, not started anew.
	p = startBin(t, client, args...)
	p.waitStderr(t, "1 report already in", 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	oa.unhang()
	res = p.wait(t, 60*time.Second)
	require.Equal(t, 0, res.code, res)
	s = readSummary(t, out)
	assert.Equal(t, []string{howKept, howAttached}, hows(s))
	assert.Equal(t, batchCounts{Total: 2, Done: 2}, s.Counts)
}

// TestE2ETemporalReview answers a run's reviews on a terminal, as a person
// does with a local --review: new queries at the first, Enter at the
// follow-up; and without a terminal the run waits on Temporal for an
// answer sent as the command says.
func TestE2ETemporalReview(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-review-" + m
	oa, vars, sx := newTemporalFake(t)
	startWorker(t, addr, queue, vars)
	clientEnv := env(t, nil)

	t.Run("on a terminal", func(t *testing.T) {
		master, slave := openPTY(t)
		p := startBinIn(t, slave, clientEnv, "--temporal", addr, "--task-queue", queue, "--review", "--loops", "2", "GAP in how Raft elects a leader "+m)
		const prompt = "[review the queries before they are searched]"
		p.waitCount(t, prompt, 1, 30*time.Second)
		assert.Contains(t, p.stderr.String(), `Waiting for a review of 2 queries: "raft leader election" · "raft log replication"`)
		assert.Contains(t, p.stderr.String(), "1. raft leader election\n  2. raft log replication")
		assert.Zero(t, searchesFor(sx, "raft leader election"), "nothing searched before the review")
		_, err := master.WriteString("raft election timeout; raft votes\n")
		require.NoError(t, err)

		p.waitCount(t, prompt, 2, 30*time.Second)
		assert.Contains(t, p.stderr.String(), "Reflection 1 found missing: The term numbers are missing.\n  1. raft term numbers")
		_, err = master.WriteString("\n")
		require.NoError(t, err)

		res := p.wait(t, 60*time.Second)
		require.Equal(t, 0, res.code, res)
		assertCitations(t, res.stdout, sx.returned())
		assert.NotContains(t, res.stderr, "Paused:")
		assert.Equal(t, 1, strings.Count(res.stderr, "Waiting for a review of 2 queries"), "each review shown once")
		for q, n := range map[string]int{"raft election timeout": 1, "raft votes": 1, "raft term numbers": 1, "raft leader election": 0, "raft log replication": 0} {
			assert.Equal(t, n, searchesFor(sx, q), "searches of %q", q)
		}
	})

	t.Run("Ctrl-C at the prompt cancels the run and prints what it has", func(t *testing.T) {
		_, slave := openPTY(t)
		p := startBinIn(t, slave, clientEnv, "--temporal", addr, "--task-queue", queue, "--review", "What is a Raft term? "+m)
		p.waitStderr(t, "[review the queries before they are searched]", 30*time.Second)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		res := p.wait(t, 30*time.Second)
		require.Equal(t, exitInterrupted, res.code, res)
		assert.Contains(t, res.stdout, "**Incomplete report.**")
		assertInOrder(t, res.stderr, "Stopped (incomplete)", "research: interrupted: run research-", "is cancelled on Temporal")
		id := strings.Fields(strings.SplitN(res.stderr, "Run ", 2)[1])[0]
		waitStatus(t, sdkClient(t, addr), id, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
	})

	t.Run("without a terminal it waits on Temporal", func(t *testing.T) {
		calls := oa.count()
		res := run(t, clientEnv, "--temporal", addr, "--task-queue", queue, "--review", "--timeout", "10m", "How does Raft replicate its log? "+m)
		require.Equal(t, exitNeedsInput, res.code, "as a local --review without a terminal: %s", res)
		id := strings.Fields(strings.SplitN(res.stderr, "Run ", 2)[1])[0]
		assert.Contains(t, res.stderr, "Paused: run "+id+" waits on Temporal for a review of the queries it is about to search:\n  1. raft leader election")
		assert.Contains(t, res.stderr, "(or its timeout of 10m0s passes)")
		assert.Empty(t, res.stdout, "no report yet")
		sdk := sdkClient(t, addr)
		waitStatus(t, sdk, id, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)

		// The answer as the printed command sends it: plain JSON, no codec.
		cmdLine := regexp.MustCompile(`temporal workflow update execute --address (\S+) --namespace default --workflow-id (\S+) --name (\S+) --input '([^']+)'`).
			FindStringSubmatch(res.stderr)
		require.NotNil(t, cmdLine, res.stderr)
		assert.Equal(t, []string{addr, id, temporalgraph.UpdateAnswer}, cmdLine[1:4])
		var arg temporalgraph.AnswerArg
		require.NoError(t, json.Unmarshal([]byte(cmdLine[4]), &arg))
		plain, err := client.Dial(client.Options{HostPort: addr})
		require.NoError(t, err)
		defer plain.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h, err := plain.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: cmdLine[3],
			Args: []any{json.RawMessage(cmdLine[4])}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil))
		var out *temporalresearch.Outcome
		require.NoError(t, sdk.GetWorkflow(ctx, id, "").Get(ctx, &out))
		require.NotNil(t, out.Report)
		assert.NotEmpty(t, out.Report.Answer, "approved, it went on to its answer")
		assert.Greater(t, oa.count(), calls)
	})
}

// TestE2ETemporalBatchTimeoutAndCost runs a batch with --timeout: the run
// past it is timed out with its incomplete report, the others done; each
// row is priced for the workers' models.
func TestE2ETemporalBatchTimeoutAndCost(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-batch-timeout-" + m
	_, vars, _ := newTemporalFake(t)
	startWorker(t, addr, queue, vars)
	dir := t.TempDir()
	out := filepath.Join(dir, "reports")
	file := filepath.Join(dir, "questions.txt")
	require.NoError(t, os.WriteFile(file, []byte("What is Raft? "+m+"\nHANG at the reflection "+m+"\n"), 0o600))
	res := run(t, env(t, nil), "batch", file, "--temporal", addr, "--task-queue", queue, "--out", out, "--timeout", "4s")
	require.Equal(t, exitFailed, res.code, res)
	assert.Regexp(t, `\[1/2\] done 001-what-is-raft-`+m+`\.md · \S+ tok · \$0\.\d{4} · `, res.stderr)
	assert.Contains(t, res.stderr, "[2/2] timed_out 002-hang-at-the-reflection-"+m+".md")
	s := readSummary(t, out)
	assert.Equal(t, batchCounts{Total: 2, Done: 1, Failed: 1}, s.Counts)
	assert.Equal(t, batchTimedOut, s.Questions[1].Status)
	assert.Contains(t, s.Questions[1].Error, "took longer than its timeout of 4s")
	for _, r := range s.Questions {
		if assert.NotNil(t, r.CostUSD, "question %d", r.N) {
			assert.Positive(t, *r.CostUSD)
		}
	}
	require.NotNil(t, s.CostUSD)
	assert.InDelta(t, *s.Questions[0].CostUSD+*s.Questions[1].CostUSD, *s.CostUSD, 1e-9)
	var doc app.ReportDoc
	data, err := os.ReadFile(filepath.Join(out, s.Questions[1].Document))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.True(t, doc.Incomplete)
	assert.NotEmpty(t, doc.Sources, "what it had gathered")
	assert.Equal(t, "openai:gpt-4.1-mini", doc.Models["answer"])
	md, err := os.ReadFile(filepath.Join(out, batchSummaryMD))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| Tokens | Cost | Duration |")
}

// TestE2ETemporalWorkerHeartbeat checks that research worker --heartbeat
// reaches Temporal: the tasks' heartbeat timeout is three beats.
func TestE2ETemporalWorkerHeartbeat(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-heartbeat-" + m
	_, vars, _ := newTemporalFake(t)
	w := startWorker(t, addr, queue, vars, "--heartbeat", "700ms")
	assert.Contains(t, w.stderr.String(), "heartbeat every 700ms (a lost worker's tasks move after 2.1s)")
	res := run(t, env(t, nil), "--temporal", addr, "--task-queue", queue, "What is Raft? "+m)
	require.Equal(t, 0, res.code, res)
	id := strings.Fields(strings.SplitN(res.stderr, "Run ", 2)[1])[0]
	it := sdkClient(t, addr).GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	tasks := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil || !strings.HasSuffix(a.GetActivityType().GetName(), ".task") {
			continue
		}
		tasks++
		assert.Equal(t, 2100*time.Millisecond, a.GetHeartbeatTimeout().AsDuration(), "activity %s", a.GetActivityId())
	}
	assert.Positive(t, tasks, "the run's tasks")
}

// TestE2ETemporalReviewWithoutAWorker answers a review while no worker is
// up: the answer waits, as the run does, and a worker that comes takes it.
func TestE2ETemporalReviewWithoutAWorker(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	queue := "e2e-review-lost-" + m
	_, vars, sx := newTemporalFake(t)
	w := startWorker(t, addr, queue, vars)
	master, slave := openPTY(t)
	p := startBinIn(t, slave, env(t, nil), "--temporal", addr, "--task-queue", queue, "--review", "What is Raft? "+m)
	p.waitStderr(t, "[review the queries before they are searched]", 30*time.Second)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t, 10*time.Second)
	_, err := master.WriteString("raft votes\n")
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	assert.NotContains(t, p.stderr.String(), "Searched ", "nobody to search yet")
	startWorker(t, addr, queue, vars)
	res := p.wait(t, 60*time.Second)
	require.Equal(t, 0, res.code, res)
	assert.NotContains(t, res.stderr, "answering the review")
	assert.Contains(t, res.stderr, `Queries: "raft votes"`)
	assert.Equal(t, 1, searchesFor(sx, "raft votes"))
	assertCitations(t, res.stdout, sx.returned())
}

// TestE2ETemporalCtrlCWithoutAWorker: with no worker to write the
// cancelled run's report, Ctrl-C does not wait for it.
func TestE2ETemporalCtrlCWithoutAWorker(t *testing.T) {
	t.Parallel()
	addr := temporalAddress(t)
	m := mark(t)
	p := startBin(t, env(t, nil), "--temporal", addr, "--task-queue", "e2e-no-worker-"+m, "What is Raft? "+m)
	p.waitStderr(t, "No worker polls task queue", 30*time.Second)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t, 30*time.Second)
	require.Equal(t, exitInterrupted, res.code, res)
	// That message is the path that does not wait for a report (the other
	// says "waiting up to 15s for its incomplete report").
	assert.Contains(t, res.stderr, "is cancelled on Temporal (no worker is up to write its incomplete report)")
	assert.NotContains(t, res.stderr, "waiting up to")
	assert.Empty(t, res.stdout)
}
