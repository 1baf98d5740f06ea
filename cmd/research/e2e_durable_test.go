package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/app"
)

// The durable runs, end to end: every run is kept, listed, shown again,
// resumed after SIGKILL without repeating finished calls, paused for
// answers and continued with --answer.

var runIDLine = regexp.MustCompile(`Run ([0-9a-z]{8}), kept in (\S+)`)

// runIDOf reads the run id from a run's timeline.
func runIDOf(t *testing.T, stderr string) string {
	t.Helper()
	m := runIDLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, "the timeline shows no run id:\n%s", stderr)
	return m[1]
}

// transcript logs commands and their output, as a user would see them.
type transcript struct {
	t *testing.T
	b strings.Builder
}

func (tr *transcript) add(cmd string, res result) {
	fmt.Fprintf(&tr.b, "$ %s\n%s%s[exit %d]\n\n", cmd, res.stderr, res.stdout, res.code)
}

func (tr *transcript) log() { tr.t.Logf("transcript:\n%s", tr.b.String()) }

// callsWhere counts the requests whose body matches pred.
func callsWhere(g *fakeGemini, pred func(geminiRequest) bool) int {
	n := 0
	for _, r := range g.all() {
		var req geminiRequest
		if json.Unmarshal(r.Body, &req) == nil && pred(req) {
			n++
		}
	}
	return n
}

func searchedFor(q string) func(geminiRequest) bool {
	return func(r geminiRequest) bool { return r.grounded() && researchQuery(r.prompt()) == q }
}

func TestE2EKilledRunResumes(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	hang := g.hangOn("Euro 2024 Torschützenkönig")
	envv := geminiEnv(t, g, nil)
	tr := &transcript{t: t}
	defer tr.log()
	question := "Wer gewann die Euro 2024 und wer schoss die meisten Tore?"

	// The run: one search finishes, the other hangs; SIGKILL.
	p := startBin(t, envv, question)
	p.waitStderr(t, `Searched "Euro 2024 Sieger"`, 30*time.Second)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 10*time.Second)
	assert.Equal(t, 128+int(syscall.SIGKILL), killed.code)
	tr.add(fmt.Sprintf("research %q   # killed with SIGKILL mid-research", question), killed)
	id := runIDOf(t, killed.stderr)
	store := runIDLine.FindStringSubmatch(killed.stderr)[2]
	assert.FileExists(t, store)
	info, err := os.Stat(store)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the store is private to the user")

	runs := run(t, envv, "runs")
	tr.add("research runs", runs)
	require.Equal(t, 0, runs.code, runs)
	assert.Regexp(t, id+`\s+\S+ \S+\s+interrupted\s+[\d,]+\s+\S+\s+\S+\s+Wer gewann die Euro 2024`, runs.stdout, "a killed run shows as interrupted")

	// What it had gathered is there before the resume.
	partial := run(t, envv, "show", id)
	require.Equal(t, 0, partial.code, partial)
	assert.Contains(t, partial.stdout, "Incomplete report")
	assert.Contains(t, partial.stdout, "Spanien gewann das Finale")
	partialJSON := run(t, envv, "show", id, "--format", "json")
	require.Equal(t, 0, partialJSON.code, partialJSON)
	var partialDoc map[string]any
	require.NoError(t, json.Unmarshal([]byte(partialJSON.stdout), &partialDoc), partialJSON.stdout)
	assert.Equal(t, true, partialDoc["incomplete"])
	assert.Equal(t, "gemini-grounding", partialDoc["backend"], "the rebuilt report names the back end the run used")

	hang.Store(false)
	before := len(g.all())
	resumed := run(t, envv, "resume", id)
	tr.add("research resume "+id, resumed)
	require.Equal(t, 0, resumed.code, resumed)
	assert.Contains(t, resumed.stdout, "Spanien gewann die Euro 2024")
	assertCitations(t, resumed.stdout, g.uris())
	assert.Contains(t, resumed.stderr, "Run "+id+" resumed")
	assert.Regexp(t, `\[\s*\d+\.\ds\s+320 tok\] Run `+id+` resumed`, resumed.stderr, "the token count goes on from the run's")
	assert.NotContains(t, resumed.stderr, `Searched "Euro 2024 Sieger"`, "the finished search is not run again")

	// No repeated call for work that had finished: one query generation in
	// all, the finished search once, the killed one twice.
	isQueries := func(r geminiRequest) bool { return r.schemaHas("query") }
	assert.Equal(t, 1, callsWhere(g, isQueries), "the queries were written once")
	assert.Equal(t, 1, callsWhere(g, searchedFor("Euro 2024 Sieger")))
	assert.Equal(t, 2, callsWhere(g, searchedFor("Euro 2024 Torschützenkönig")), "the killed search runs again")
	t.Logf("requests: %d before the resume, %d after", before, len(g.all()))

	shown := run(t, envv, "show", id)
	tr.add("research show "+id, shown)
	require.Equal(t, 0, shown.code, shown)
	assert.Equal(t, resumed.stdout, shown.stdout, "show prints the report again")
	js := run(t, envv, "show", id[:5], "--format", "json")
	require.Equal(t, 0, js.code, js)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc), js.stdout)
	assert.Equal(t, app.ReportSchema, doc["schema"])
	assert.Equal(t, false, doc["incomplete"])

	runs = run(t, envv, "runs", "--format", "json")
	require.Equal(t, 0, runs.code, runs)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(runs.stdout), &list))
	require.Len(t, list, 1)
	assert.Equal(t, "done", list[0]["status"])
	assert.Equal(t, id, list[0]["id"])
	done := regexp.MustCompile(`Done in \S+ · ([\d,]+) tokens · (\d+) LLM calls`).FindStringSubmatch(resumed.stderr)
	require.NotNil(t, done, resumed.stderr)
	assert.Equal(t, strings.ReplaceAll(done[1], ",", ""), fmt.Sprint(list[0]["tokens"]), "the run's record counts what the whole run spent")
	assert.Equal(t, done[2], fmt.Sprint(list[0]["llm_calls"]))

	// The key never reaches the store.
	for _, f := range []string{store, store + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			assert.False(t, bytes.Contains(b, []byte(geminiKey)), "%s holds the API key", f)
		}
	}
}

func TestE2EReviewWithoutATerminal(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	res := run(t, envv, "--review", "Wer gewann die Euro 2024?")
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assert.Contains(t, res.stderr, `Waiting for a review of 2 queries: "Euro 2024 Sieger" · "Euro 2024 Torschützenkönig"`)
	assert.Contains(t, res.stderr, "Paused: run "+id+" waits for a review")
	assert.Contains(t, res.stderr, "research resume "+id+" --answer ok")
	assert.Empty(t, res.stdout, "no report yet")
	assert.Zero(t, callsWhere(g, func(r geminiRequest) bool { return r.grounded() }), "nothing searched before the review")

	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*needs-input`, runs.stdout)

	// Replace the queries; the follow-up review stops the research.
	res = run(t, envv, "resume", id, "--answer", "Euro 2024 Finale; Euro 2024 Spanien")
	require.Equal(t, exitNeedsInput, res.code, res)
	assert.Contains(t, res.stderr, `Queries: "Euro 2024 Finale" · "Euro 2024 Spanien"`)
	// Paused before any answer: the sources gathered, none "cited".
	assert.Regexp(t, `Paused for review in \S+ · [\d,]+ tokens · \d+ LLM calls · 4 sources gathered so far`, res.stderr)
	assert.NotRegexp(t, `Paused for review.*cited`, res.stderr)
	assert.Contains(t, res.stderr, "Reflection 1 found missing: Die Anzahl der Tore fehlt.")
	assert.Equal(t, 1, callsWhere(g, searchedFor("Euro 2024 Finale")))
	assert.Equal(t, 1, callsWhere(g, searchedFor("Euro 2024 Spanien")))
	assert.Zero(t, callsWhere(g, searchedFor("Euro 2024 Sieger")), "the replaced query is not searched")

	res = run(t, envv, "resume", id, "--answer", "stop")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "Spanien gewann die Euro 2024")
	assert.Zero(t, callsWhere(g, searchedFor("Euro 2024 Tore Anzahl")), "stopped before the follow-up")
	assert.Equal(t, 1, callsWhere(g, func(r geminiRequest) bool { return r.schemaHas("query") }))

	res = run(t, envv, "resume", id)
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "is done; research show "+id)

	// Bad input is a clear error that loses nothing.
	res = run(t, envv, "--review", "--no-input", "Noch eine Frage?")
	require.Equal(t, exitNeedsInput, res.code, res)
	second := runIDOf(t, res.stderr)
	res = run(t, envv, "resume", second, "--answer", `{"queries": 7}`)
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "--answer: the answer is not a review answer")
	runs = run(t, envv, "runs")
	assert.Regexp(t, second+`.*needs-input`, runs.stdout, "a refused answer leaves the run waiting as it was")
	noKey := slices.DeleteFunc(slices.Clone(envv), func(v string) bool { return strings.HasPrefix(v, "GEMINI_API_KEY=") })
	res = run(t, noKey, "resume", second, "--answer", "ok")
	require.Equal(t, exitUsage, res.code, "no model without a key: %s", res)
	runs = run(t, envv, "runs")
	assert.Regexp(t, second+`.*needs-input`, runs.stdout, "a resume that could not start leaves the run waiting as it was")
	res = run(t, envv, "resume", second, "--answer", "ok")
	require.Equal(t, 0, res.code, "the run still waited, took the good answer and finished: %s", res)
	assert.Contains(t, res.stdout, "Spanien gewann die Euro 2024")
}

func TestE2EAgentQuestionWithoutATerminal(t *testing.T) {
	t.Parallel()
	ask := oaCall{Name: "ask_human", Args: `{"question":"Which city should the notes cover?"}`}
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		for _, r := range c.req.toolResults() {
			if strings.Contains(r, "The user answered: Lyon") {
				return oaReply{ToolCalls: []oaCall{terminate("success", "Notes about Lyon.")}}
			}
		}
		return oaReply{Content: "I need to know the city.", ToolCalls: []oaCall{ask}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	ws := t.TempDir()
	res := run(t, envv, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", ws, "Write city notes")
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assert.Contains(t, res.stderr, "waits for your answer to the agent's question:\n  Which city should the notes cover?")
	assert.Contains(t, res.stderr, "research resume "+id+" --answer")

	res = run(t, envv, "resume", id, "--answer", "Lyon")
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, "Notes about Lyon.\n", res.stdout)
	assert.Contains(t, res.stderr, "← ask_human")
	assert.Contains(t, res.stderr, "in workspace "+ws, "the resumed run works in the same workspace")
	thinks := 0
	for _, r := range oa.all() {
		if strings.Contains(string(r.Body), `"tools"`) {
			thinks++
		}
	}
	assert.Equal(t, 2, thinks, "the first think step was not repeated")

	res = run(t, envv, "show", id)
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, "Notes about Lyon.\n", res.stdout)
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*done.*agent: Write city notes`, runs.stdout)
}

func TestE2EFollowUpOnAThread(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	first := run(t, envv, "--loops", "1", "Wer gewann die Euro 2024?")
	require.Equal(t, 0, first.code, first)
	id := runIDOf(t, first.stderr)
	second := run(t, envv, "--loops", "1", "--thread", id, "Und wer schoss die meisten Tore?")
	require.Equal(t, 0, second.code, second)
	other := runIDOf(t, second.stderr)
	assert.NotEqual(t, id, other, "a follow-up is a run of its own")
	var last geminiRequest
	for _, r := range g.all() {
		var req geminiRequest
		if json.Unmarshal(r.Body, &req) == nil && req.schemaHas("query") {
			last = req
		}
	}
	prompt := last.prompt()
	assert.Contains(t, prompt, "User: Wer gewann die Euro 2024?")
	assert.Contains(t, prompt, "Assistant: ")
	assert.Contains(t, prompt, "User: Und wer schoss die meisten Tore?")

	res := run(t, envv, "--thread", "zzzzzzzz", "Noch was?")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "research runs lists the runs")
}

func TestE2ERunsRemoveAndPrune(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	var ids []string
	for _, q := range []string{"Erste Frage?", "Zweite Frage?"} {
		res := run(t, envv, "--loops", "1", q)
		require.Equal(t, 0, res.code, res)
		ids = append(ids, runIDOf(t, res.stderr))
	}
	runs := run(t, envv, "runs")
	require.Equal(t, 0, runs.code, runs)
	assert.Less(t, strings.Index(runs.stdout, ids[1]), strings.Index(runs.stdout, ids[0]), "newest first")
	assert.Contains(t, runs.stdout, "ID  ")

	res := run(t, envv, "rm", ids[0])
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "Removed run "+ids[0])
	res = run(t, envv, "show", ids[0])
	require.Equal(t, exitUsage, res.code, res)

	res = run(t, envv, "runs", "--prune", "30d")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "Removed 0 runs")
	time.Sleep(20 * time.Millisecond)
	res = run(t, envv, "runs", "--prune", "10ms")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "Removed 1 run ")
	runs = run(t, envv, "runs")
	assert.Contains(t, runs.stdout, "No runs are kept yet")

	res = run(t, envv, "runs", "--prune", "soon")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "30d")
}

func TestE2ENoSaveAndBadStores(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	res := run(t, envv, "--no-save", "--loops", "1", "Wer gewann?")
	require.Equal(t, 0, res.code, res)
	assert.NotContains(t, res.stderr, "kept in")
	res = run(t, envv, "runs", "--no-save")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "the store is off")
	res = run(t, envv, "--no-save", "--review", "Wer gewann?")
	require.Equal(t, exitUsage, res.code, res)

	notAStore := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notAStore, []byte(strings.Repeat("not a database\n", 500)), 0o600))
	res = run(t, envv, "--store", notAStore, "Wer gewann?")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, notAStore)
	assert.Contains(t, res.stderr, "--no-save")
	assert.NotContains(t, res.stderr, "panic")

	res = run(t, envv, "--store", "ftp://example.com/x", "Wer gewann?")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "store")
}

// TestE2EPostgresStore keeps runs in PostgreSQL when a server is there.
func TestE2EPostgresStore(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("DEEPGRAPH_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set DEEPGRAPH_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them (.ci/run sets it when a server answers on 127.0.0.1:5432)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	schema := fmt.Sprintf("dg_e2e_%x", rand.Uint64())
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(context.Background())
	})
	// The test server trusts local connections and ignores the password:
	// it is there to show that no output reveals it.
	const password = "pg-pass-2718"
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), password)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	store := u.String()
	var outputs []string
	defer func() {
		for _, o := range outputs {
			assert.NotContains(t, o, password)
		}
	}()

	g := newFakeGemini(t)
	envv := geminiEnv(t, g, map[string]string{"DEEPGRAPH_STORE": store})
	res := run(t, envv, "--review", "Wer gewann die Euro 2024?")
	outputs = append(outputs, res.all())
	require.Equal(t, exitNeedsInput, res.code, res)
	assert.Contains(t, res.stderr, "kept in postgres://postgres:xxxxx@127.0.0.1")
	cfgOut := run(t, envv, "config")
	outputs = append(outputs, cfgOut.all())
	assert.Regexp(t, `store +postgres://postgres:xxxxx@`, cfgOut.stdout)
	id := runIDOf(t, res.stderr)
	res = run(t, envv, "resume", id, "--answer", "ok")
	require.Equal(t, exitNeedsInput, res.code, res)
	res = run(t, envv, "resume", id, "--answer", "ok")
	require.Equal(t, 0, res.code, res)
	assertCitations(t, res.stdout, g.uris())
	shown := run(t, envv, "show", id)
	require.Equal(t, 0, shown.code, shown)
	assert.Equal(t, res.stdout, shown.stdout)
	runs := run(t, envv, "runs")
	outputs = append(outputs, res.all(), shown.all(), runs.all())
	assert.Regexp(t, id+`.*done`, runs.stdout)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".deepgraph_checkpoints").Scan(&n))
	assert.Greater(t, n, 3, "the checkpoints are in PostgreSQL")
}
