package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools"
)

// The world of the server's tests: a fake model (llm/fake, with an answer
// writer that cites what the summaries cite, streamed token by token) and a
// fake search, both with latency, behind an Engine like the server's.

// world tunes the fakes.
type world struct {
	// callDelay is each model call's latency; tokenDelay each streamed
	// token's.
	callDelay, tokenDelay time.Duration
	// searchDelay is each search's latency.
	searchDelay time.Duration
	// hostile makes the answer carry markup that must never run in the
	// page, and the sources hostile titles.
	hostile bool
	// block, when set, is a query whose research never returns until its
	// context ends (a run in flight).
	block string
	// blockSummary, when set, is a query whose search returns but whose
	// summary never does until its context ends (a run cut between the
	// two).
	blockSummary string
	// queries is how many queries the query writer proposes.
	queries int
	// stamp makes each answer token carry the time it was written,
	// "{unixnano}", for the latency figures of the load test.
	stamp bool
}

// worldModel answers the deep-search prompts: queries, summaries and
// reflections from llm/fake's script; the answer by citing every marker of
// the summaries, streamed.
type worldModel struct {
	w      *world
	script *fake.Model
	calls  atomic.Int64
	// summaryBlocked is closed when the summary world.blockSummary names
	// is under way; unblocked lifts world.blockSummary.
	summaryBlocked chan struct{}
	blockedOnce    sync.Once
	unblocked      atomic.Bool
}

var markerRe = regexp.MustCompile(`\[[^\]]+\]\(https://vertexaisearch\.cloud\.google\.com/id/[0-9]+-[0-9]+\)`)

func newWorld(w world) *worldModel {
	if w.queries == 0 {
		w.queries = 2
	}
	qs := make([]string, w.queries)
	for i := range qs {
		qs[i] = fmt.Sprintf("query %d", i+1)
	}
	script := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: qs, Rationale: "cover the question"}).WithTokens(100, 20).When(fake.Schema("SearchQueryList")).Repeat(),
		fake.JSON(schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}}).WithTokens(300, 30).When(fake.Schema("Reflection")).Repeat(),
		fake.Text("The sources agree on the main point [S1] and add a detail [S2].").WithTokens(500, 40).When(fake.Contains("Summarise what the sources")).Repeat(),
	)
	return &worldModel{w: &w, script: script, summaryBlocked: make(chan struct{})}
}

func (m *worldModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	m.calls.Add(1)
	if err := sleep(ctx, m.w.callDelay); err != nil {
		return nil, err
	}
	prompt := msgs[len(msgs)-1].Content
	if q := m.w.blockSummary; q != "" && !m.unblocked.Load() && strings.Contains(prompt, "Summarise what the sources") && strings.Contains(prompt, q) {
		m.blockedOnce.Do(func() { close(m.summaryBlocked) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if !strings.Contains(prompt, "well-researched answer") {
		return m.script.Generate(ctx, msgs, opts...)
	}
	var marks []string
	for _, mk := range markerRe.FindAllString(prompt, -1) {
		if !slices.Contains(marks, mk) {
			marks = append(marks, mk)
		}
	}
	text := "## Findings\n\nThe answer is **clear**: " + strings.Join(marks, " ") + ".\n\n- first point\n- second point\n"
	if m.w.hostile {
		text += "\nInjected: <script>window.__pwned=1</script> <img src=x onerror=\"window.__pwned=2\"> [click me](javascript:window.__pwned=3) " +
			"[data](data:text/html,<script>window.__pwned=4</script>) <a href=\"javascript:window.__pwned=5\">raw link</a> ![pic](https://evil.example/x.png)\n"
	}
	req := llm.NewRequest(opts...)
	if req.OnDelta != nil {
		for _, tok := range strings.SplitAfter(text, " ") {
			if err := sleep(ctx, m.w.tokenDelay); err != nil {
				return nil, err
			}
			if m.w.stamp {
				tok = fmt.Sprintf("%s{%d} ", tok, time.Now().UnixNano())
			}
			req.OnDelta(llm.Delta{Content: tok})
		}
	}
	return &llm.Response{Content: text, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 60, TotalTokens: 960}}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// worldSearch finds two sources per query.
type worldSearch struct {
	w        *world
	searches atomic.Int64
	// unblocked lifts world.block: searches of its query return from then
	// on (a resumed run finishes).
	unblocked atomic.Bool
	mu        sync.Mutex
	queries   []string
}

func (s *worldSearch) Name() string { return "world" }

func (s *worldSearch) Search(ctx context.Context, query string, _ search.Options) ([]search.Result, error) {
	s.searches.Add(1)
	s.mu.Lock()
	s.queries = append(s.queries, query)
	s.mu.Unlock()
	if s.w.block != "" && query == s.w.block && !s.unblocked.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := sleep(ctx, s.w.searchDelay); err != nil {
		return nil, err
	}
	slug := strings.ReplaceAll(query, " ", "-")
	title := "Source on " + query
	if s.w.hostile {
		title = `<img src=x onerror="window.__pwned=6"> ` + title
	}
	return []search.Result{
		{Title: title, URL: "https://example.org/" + slug, Content: "What example.org says about " + query + "."},
		{Title: "Second source on " + query, URL: "https://docs.example.net/" + slug, Content: "More on " + query + "."},
	}, nil
}

// testEngine is the Engine of the tests: the world's model for every role
// and the world's search.
type testEngine struct {
	model  *worldModel
	search *worldSearch
	// agentScript answers agent runs.
	agentScript *fake.Model
	// agentTools are the agent's tools beside ask_human and terminate;
	// with approveTools, their calls with side effects wait for approval.
	agentTools   []tools.Tool
	approveTools bool
	// flowPlanner plans and summarises flow runs; flowSteps records the
	// steps the flow's executor was given, which it does by saying so.
	flowPlanner *fake.Model
	flowMu      sync.Mutex
	flowSteps   []string
	// prices are the runs' prices, as the config file's prices key gives
	// them (fake:world has no built-in price).
	prices llm.Prices
	// defaultReview is Choices.DefaultReview (serve.review).
	defaultReview bool
}

func (e *testEngine) Choices() Choices {
	return Choices{Kinds: []runstore.Kind{runstore.KindResearch, runstore.KindAgent}, Efforts: research.Efforts(), DefaultEffort: "low",
		Backends: []string{BackendWeb}, DefaultBackend: BackendWeb, Models: []string{"fake:world"}, DefaultReview: e.defaultReview}
}

func (e *testEngine) Settings(req RunRequest) (app.Settings, error) {
	set := app.Settings{Models: map[string]string{}, Effort: "low", Queries: 1, Loops: 1, Review: req.Review}
	if req.Kind == runstore.KindAgent || req.Kind == runstore.KindFlow {
		set.Models["agent"] = "fake:world"
		set.Agent = &config.Agent{MaxSteps: 5}
		if req.Kind == runstore.KindFlow {
			set.Flow = &app.FlowRunSettings{Approve: req.Review}
		}
		return set, nil
	}
	if req.Effort != "" {
		ef, err := research.EffortByName(req.Effort)
		if err != nil {
			return set, badRequest("effort: %v", err)
		}
		set.Effort, set.Queries, set.Loops = ef.Name, ef.Queries, ef.Loops
	}
	for role, spec := range req.Models {
		if spec != "fake:world" {
			return set, badRequest("model %q is not offered by this server", spec)
		}
		set.Models[role] = spec
	}
	if req.Backend != "" && req.Backend != BackendWeb {
		return set, badRequest("backend %q is not configured on this server", req.Backend)
	}
	for _, role := range app.Roles {
		if set.Models[role] == "" {
			set.Models[role] = "fake:world"
		}
	}
	return set, nil
}

func (e *testEngine) Research(_ context.Context, set app.Settings, cp graph.Checkpointer) (*ResearchRun, error) {
	r, err := research.New(research.Config{QueryModel: e.model, Backend: &research.SearchBackend{Searcher: e.search, ReadPages: -1},
		InitialQueries: set.Queries, MaxLoops: set.Loops, Checkpointer: cp})
	if err != nil {
		return nil, err
	}
	return &ResearchRun{Researcher: r, Models: set.Models, Backend: "search:world", Prices: e.prices}, nil
}

func (e *testEngine) Agent(_ context.Context, set app.Settings, cp graph.Checkpointer) (*AgentRun, error) {
	ask, err := tools.NewAskHuman(tools.AskHumanOptions{Asker: noHuman{}})
	if err != nil {
		return nil, err
	}
	set2, err := tools.NewCollection(append([]tools.Tool{ask, tools.NewTerminate()}, e.agentTools...)...)
	if err != nil {
		return nil, err
	}
	meter := new(llm.Meter)
	a, err := nodes.NewAgent(nodes.AgentConfig{Model: llm.Metered(e.agentScript, meter, llm.RoleAgent), Tools: set2, MaxSteps: 5, Checkpointer: cp,
		ApproveTools: e.approveTools})
	if err != nil {
		return nil, err
	}
	return &AgentRun{Agent: a, Model: "fake:world", Workspace: "/nonexistent", Prices: e.prices, Meter: meter}, nil
}

func (e *testEngine) Flow(_ context.Context, set app.Settings, cp graph.Checkpointer) (*FlowRun, error) {
	exec := nodes.ExecutorFunc(func(_ context.Context, t nodes.StepTask) (nodes.StepResult, error) {
		e.flowMu.Lock()
		defer e.flowMu.Unlock()
		e.flowSteps = append(e.flowSteps, t.Step)
		return nodes.StepResult{Output: "Done: " + t.Step}, nil
	})
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: e.flowPlanner, Executors: []nodes.FlowExecutor{{Name: "agent", Executor: exec}},
		Approve: set.Flow != nil && set.Flow.Approve, Checkpointer: cp})
	if err != nil {
		return nil, err
	}
	return &FlowRun{Flow: f, Models: map[string]string{nodes.RolePlanner: "fake:world"}, Prices: e.prices}, nil
}

type noHuman struct{}

func (noHuman) Ask(context.Context, string) (string, error) { return "", tools.ErrNoHuman }

// testServer is a server over a SQLite store in a temporary directory,
// serving on httptest.
type testServer struct {
	t     testing.TB
	srv   *Server
	http  *httptest.Server
	store *app.Store
	eng   *testEngine
	token string
	path  string
}

type serverOption func(*Options, *testEngine)

func newTestServer(t testing.TB, w world, opts ...serverOption) *testServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	return startTestServer(t, path, newEngine(w), opts...)
}

func newEngine(w world) *testEngine {
	m := newWorld(w)
	return &testEngine{model: m, search: &worldSearch{w: m.w}, agentScript: fake.New(), flowPlanner: fake.New()}
}

func startTestServer(t testing.TB, path string, eng *testEngine, opts ...serverOption) *testServer {
	t.Helper()
	return startWrappedServer(t, path, eng, nil, opts...)
}

// startWrappedServer is startTestServer with wrap (when set) around the
// server's handler: a test's middleware.
func startWrappedServer(t testing.TB, path string, eng *testEngine, wrap func(http.Handler) http.Handler, opts ...serverOption) *testServer {
	t.Helper()
	ctx := context.Background()
	st, err := app.OpenStore(ctx, &config.Config{Store: config.Store(path)})
	require.NoError(t, err)
	o := Options{MaxRunning: 2, QueueSize: 8, Loopback: true, Version: "test"}
	for _, opt := range opts {
		opt(&o, eng)
	}
	srv, err := New(st, eng, o)
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	ts := &testServer{t: t, srv: srv, http: hs, store: st, eng: eng, token: o.Token, path: path}
	t.Cleanup(ts.stop)
	return ts
}

// stop shuts the server down as SIGTERM does, once.
func (ts *testServer) stop() {
	if ts.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(ts.t, ts.srv.Shutdown(ctx))
	ts.http.CloseClientConnections()
	ts.http.Close()
	ts.store.Close()
	ts.http = nil
}

// do sends a request with a JSON body (nil: none) and returns the status
// and the body.
func (ts *testServer) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	ts.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(ts.t, err)
		r = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, ts.http.URL+path, r)
	require.NoError(ts.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ts.token != "" {
		req.Header.Set("X-Api-Key", ts.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	return resp.StatusCode, data, resp.Header
}

// call is do for a JSON answer of want status, decoded into a T.
func call[T any](ts *testServer, method, path string, body any, want int) T {
	ts.t.Helper()
	status, data, _ := ts.do(method, path, body)
	require.Equal(ts.t, want, status, "%s %s: %s", method, path, data)
	var v T
	require.NoError(ts.t, json.Unmarshal(data, &v), "%s", data)
	return v
}

// queueOf sets the server's bounds: running runs, and waiting ones.
func queueOf(running, size int) serverOption {
	return func(o *Options, _ *testEngine) { o.MaxRunning, o.QueueSize = running, size }
}
