package research_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }

func queries(q ...string) fake.Reply {
	return fake.JSON(schemas.SearchQueryList{Query: q, Rationale: "because"}).When(fake.Schema("SearchQueryList")).WithTokens(100, 20)
}

func reflection(sufficient bool, gap string, follow ...string) fake.Reply {
	if follow == nil {
		follow = []string{}
	}
	return fake.JSON(schemas.Reflection{IsSufficient: sufficient, KnowledgeGap: gap, FollowUpQueries: follow}).When(fake.Schema("Reflection")).WithTokens(200, 30)
}

// grounded is a Gemini reply for query q whose one sentence is supported by
// a chunk at uri.
func grounded(q, sentence, uri, title string) fake.Reply {
	return fake.Text(sentence).When(fake.All(fake.Contains(q), fake.Contains("Google Search"))).WithTokens(300, 50).WithGrounding(&llm.Grounding{
		WebSearchQueries: []string{q},
		Chunks:           []llm.GroundingChunk{{URI: uri, Title: title}},
		Supports:         []llm.GroundingSupport{{StartIndex: 0, EndIndex: len(sentence), ChunkIndices: []int{0}}},
	})
}

var markerRe = regexp.MustCompile(`\[[^\]]+\]\(https://vertexaisearch\.cloud\.google\.com/id/[0-9]+-[0-9]+\)`)

// echoModel answers the final-answer prompt by citing every marker of the
// summaries (and one hallucinated link); everything else goes to next.
type echoModel struct {
	next  llm.Model
	calls atomic.Int32
}

func (m *echoModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	prompt := msgs[len(msgs)-1].Content
	if !strings.Contains(prompt, "well-researched answer") {
		return m.next.Generate(ctx, msgs, opts...)
	}
	m.calls.Add(1)
	marks := markerRe.FindAllString(prompt, -1)
	text := "Answer: " + strings.Join(marks, " ") + " and [made up](https://vertexaisearch.cloud.google.com/id/9-9)."
	req := llm.NewRequest(opts...)
	if req.OnDelta != nil {
		for _, w := range strings.SplitAfter(text, " ") {
			req.OnDelta(llm.Delta{Content: w})
		}
	}
	return &llm.Response{Content: text, Usage: llm.Usage{PromptTokens: 400, CompletionTokens: 80, TotalTokens: 480}}, nil
}

func TestGeminiGroundingEndToEnd(t *testing.T) {
	m := fake.New(
		queries("euro 2024 winner", "euro 2024 top scorer"),
		grounded("euro 2024 winner", "Spain won Euro 2024 — en Berlín, ¡olé!", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", "uefa.com"),
		grounded("euro 2024 top scorer", "Harry Kane shared the Golden Boot with five others.", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB", "espn.com"),
		reflection(true, ""),
	)
	echo := &echoModel{next: m}
	r, err := research.New(research.Config{QueryModel: echo, Backend: research.GeminiBackend{KeepRedirects: true}, Now: fixedNow})
	require.NoError(t, err)

	var acts []research.ActivityKind
	var tokens strings.Builder
	var steps []research.StepState
	rep, err := r.Run(context.Background(), "Who won Euro 2024 and who scored most?", research.Observe(func(a research.Activity) {
		acts = append(acts, a.Kind)
		if a.Kind == research.ActivityToken {
			tokens.WriteString(a.Token)
		}
	}), research.ObserveSteps(func(s research.StepState) { steps = append(steps, s) }))
	require.NoError(t, err)
	require.Len(t, steps, 4, "generate, research, reflect, finalize")
	assert.Equal(t, []string{research.NodeGenerateQuery}, steps[0].Nodes)
	assert.Equal(t, []string{research.NodeWebResearch}, steps[1].Nodes)
	assert.Len(t, steps[1].State.Findings, 2)
	assert.Equal(t, 1, steps[2].State.Loops)
	assert.Equal(t, []string{research.NodeFinalizeAnswer}, steps[3].Nodes)
	assert.Equal(t, rep.Answer, steps[3].State.Answer)
	assert.False(t, rep.Incomplete)
	assert.Equal(t, []string{"euro 2024 winner", "euro 2024 top scorer"}, rep.Queries)
	assert.Equal(t, 1, rep.Loops)
	assert.Equal(t, "gemini-grounding", rep.Backend)
	require.Len(t, rep.Sources, 2)
	assert.Equal(t, "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", rep.Sources[0].URL)
	assert.Equal(t, "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB", rep.Sources[1].URL)
	assert.Equal(t, 1, rep.Dropped, "the made-up citation was removed")
	assert.Contains(t, rep.Answer, "[1](https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA)")
	assert.NotContains(t, rep.Answer, "/id/")
	assert.NotContains(t, rep.Answer, "made up")
	assert.Equal(t, 2, rep.Gathered)

	md := rep.Markdown()
	assert.Contains(t, md, "## Sources\n\n1. [uefa.com](https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA)\n2. [espn.com]")

	// The summaries the answer model saw carried markers at byte offsets:
	// after the non-ASCII sentence, not inside it.
	assert.Contains(t, m.Calls()[0].Request.Schema.Properties, "query")
	for _, c := range m.Calls() {
		if c.Request.GoogleSearch {
			assert.NotNil(t, c.Request.Temperature)
		}
	}
	assert.Equal(t, []research.ActivityKind{"generating_queries", "queries", "searching", "searching", "searched", "searched",
		"reflecting", "reflected", "finalizing"}, acts[:9])
	assert.Equal(t, research.ActivityAnswered, acts[len(acts)-1])
	assert.Contains(t, tokens.String(), "Answer:")

	// Usage per role.
	assert.Equal(t, 1, rep.Usage[llm.RoleQuery].Calls)
	assert.Equal(t, 2, rep.Usage[llm.RoleResearch].Calls)
	assert.Equal(t, 1, rep.Usage[llm.RoleReflection].Calls)
	assert.Equal(t, 1, rep.Usage[llm.RoleAnswer].Calls)
	assert.Equal(t, 480, rep.Usage[llm.RoleAnswer].Usage.TotalTokens)
	assert.Equal(t, 700, rep.Usage[llm.RoleResearch].Usage.TotalTokens)
	require.NotEmpty(t, rep.Timings.Steps)
	assert.Equal(t, research.NodeGenerateQuery, rep.Timings.Steps[0].Node)
	assert.Equal(t, 2, rep.Timings.Steps[1].Tasks)
}

func TestGeminiBackendSurvivesMissingMetadata(t *testing.T) {
	m := fake.New(
		queries("q"),
		fake.Text("An answer without any grounding.").When(fake.Contains("Google Search")),
		reflection(true, ""),
	)
	echo := &echoModel{next: m}
	r, err := research.New(research.Config{QueryModel: echo, Backend: research.GeminiBackend{}, Now: fixedNow})
	require.NoError(t, err)
	rep, err := r.Run(context.Background(), "q?")
	require.NoError(t, err)
	assert.Empty(t, rep.Sources)
	assert.Equal(t, 0, rep.Gathered)
	assert.Equal(t, 1, rep.Dropped)
}

// scripted is a Backend that records the queries it researched, and can
// block each call until a number of calls are in flight at once.
type scripted struct {
	mu       sync.Mutex
	seen     []string
	inFlight atomic.Int32
	peak     atomic.Int32
	wait     int // block until this many calls are in flight (0: don't)
	delay    time.Duration
	release  chan struct{}
}

func (b *scripted) Name() string { return "scripted" }

func (b *scripted) Research(ctx context.Context, model llm.Model, q research.Query) (research.Finding, error) {
	b.mu.Lock()
	b.seen = append(b.seen, q.Text)
	b.mu.Unlock()
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if b.wait > 0 && int(n) == b.wait {
		close(b.release)
	}
	if b.wait > 0 {
		select {
		case <-b.release:
		case <-time.After(30 * time.Second):
			return research.Finding{}, fmt.Errorf("only %d of %d searches were in flight at once", b.peak.Load(), b.wait)
		case <-ctx.Done():
			return research.Finding{}, ctx.Err()
		}
	}
	if b.delay > 0 {
		select {
		case <-time.After(b.delay):
		case <-ctx.Done():
			return research.Finding{}, ctx.Err()
		}
	}
	return research.Finding{Summary: "facts about " + q.Text}, nil
}

func (b *scripted) queries() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

func newResearcher(t *testing.T, m llm.Model, b research.Backend, cfg research.Config) *research.Researcher {
	t.Helper()
	cfg.QueryModel, cfg.Backend, cfg.Now = m, b, fixedNow
	r, err := research.New(cfg)
	require.NoError(t, err)
	return r
}

func TestLoopFixes(t *testing.T) {
	t.Run("max loops is honoured and earlier follow-ups are not re-run", func(t *testing.T) {
		m := fake.New(
			queries("a", "b"),
			reflection(false, "gap 1", "c", "d"),
			reflection(false, "gap 2", "c", "e", "A"), // c and a were searched already
			reflection(false, "gap 3", "f"),           // loop 3 = MaxLoops: finalize
			fake.Text("final").When(fake.Contains("well-researched answer")),
		)
		b := &scripted{}
		r := newResearcher(t, m, b, research.Config{MaxLoops: 3})
		rep, err := r.Run(context.Background(), "question")
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"a", "b", "c", "d", "e"}, b.queries())
		assert.Len(t, b.queries(), 5, "each query searched once")
		assert.Equal(t, []string{"a", "b", "c", "d", "e"}, rep.Queries)
		assert.Equal(t, 3, rep.Loops)
		assert.Equal(t, "final", rep.Answer)
	})
	t.Run("a per-run loop limit", func(t *testing.T) {
		m := fake.New(queries("a"), reflection(false, "gap", "b"), fake.Text("final").When(fake.Contains("well-researched answer")))
		b := &scripted{}
		r := newResearcher(t, m, b, research.Config{MaxLoops: 5})
		rep, err := r.Run(context.Background(), "question", research.MaxLoops(1))
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, b.queries())
		assert.Equal(t, 1, rep.Loops)
	})
	t.Run("not sufficient without follow-ups finalises", func(t *testing.T) {
		m := fake.New(queries("a"), reflection(false, "missing things"), fake.Text("final").When(fake.Contains("well-researched answer")))
		r := newResearcher(t, m, &scripted{}, research.Config{MaxLoops: 5})
		rep, err := r.Run(context.Background(), "question")
		require.NoError(t, err)
		assert.Equal(t, "final", rep.Answer)
		assert.Equal(t, 1, rep.Loops)
	})
	t.Run("follow-ups that were all searched already finalise", func(t *testing.T) {
		m := fake.New(queries("a", "b"), reflection(false, "gap", "B ", "a."), fake.Text("final").When(fake.Contains("well-researched answer")))
		b := &scripted{}
		r := newResearcher(t, m, b, research.Config{MaxLoops: 5})
		_, err := r.Run(context.Background(), "question")
		require.NoError(t, err)
		assert.Len(t, b.queries(), 2)
	})
	t.Run("initial queries are deduplicated and capped", func(t *testing.T) {
		m := fake.New(queries("a", " A ", "b", "c", "d"), reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer")))
		b := &scripted{}
		r := newResearcher(t, m, b, research.Config{})
		rep, err := r.Run(context.Background(), "question", research.InitialQueries(2))
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, rep.Queries)
		assert.Contains(t, m.Calls()[0].LastMessage().Content, "Write at most 2 queries")
	})
	t.Run("no usable query searches the question itself", func(t *testing.T) {
		m := fake.New(queries(), reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer")))
		b := &scripted{}
		r := newResearcher(t, m, b, research.Config{})
		_, err := r.Run(context.Background(), "  what is raft?  ")
		require.NoError(t, err)
		assert.Equal(t, []string{"what is raft?"}, b.queries())
	})
}

func TestFollowUpQuestionOnAThreadStartsAFreshRound(t *testing.T) {
	m := fake.New(
		queries("a"), reflection(true, ""), fake.Text("first answer").When(fake.Contains("well-researched answer")),
		queries("a", "z"), reflection(true, ""), fake.Text("second answer").When(fake.Contains("well-researched answer")),
	)
	b := &scripted{}
	r := newResearcher(t, m, b, research.Config{Checkpointer: graph.NewMemorySaver()})
	_, err := r.Run(context.Background(), "first question", research.Thread("t"))
	require.NoError(t, err)
	rep, err := r.Run(context.Background(), "and a follow-up?", research.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "second answer", rep.Answer)
	assert.Equal(t, []string{"a", "z"}, rep.Queries, "the new turn's queries only")
	assert.Equal(t, 1, rep.Loops, "the loop count starts again")
	assert.Equal(t, llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}}, rep.Usage[llm.RoleQuery],
		"the turn counts its own usage, not the earlier question's")
	assert.Equal(t, 1, rep.Usage[llm.RoleReflection].Calls)
	searched := b.queries()
	require.Len(t, searched, 3)
	assert.Equal(t, "a", searched[0])
	assert.ElementsMatch(t, []string{"a", "z"}, searched[1:], "a new turn may search a query of an earlier turn (its two searches run in parallel)")
	// The second turn's prompts see the conversation.
	prompt := m.Calls()[3].LastMessage().Content
	assert.Contains(t, prompt, "User: first question")
	assert.Contains(t, prompt, "Assistant: first answer")
	assert.Contains(t, prompt, "User: and a follow-up?")
}

func TestWebResearchRunsConcurrently(t *testing.T) {
	m := fake.New(queries("a", "b", "c"), reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer")))
	b := &scripted{wait: 3, release: make(chan struct{})}
	r := newResearcher(t, m, b, research.Config{})
	_, err := r.Run(context.Background(), "question")
	require.NoError(t, err, "all three searches of the round must be in flight at once")
	assert.Equal(t, int32(3), b.peak.Load())
}

func TestCancelledRunReturnsAnIncompleteReport(t *testing.T) {
	m := fake.New(queries("a", "b"), fake.Text("never").Block())
	b := &scripted{}
	srcBackend := &citingBackend{scripted: b}
	r := newResearcher(t, m, srcBackend, research.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	rep, err := r.Run(ctx, "question", research.Observe(func(a research.Activity) {
		if a.Kind == research.ActivityReflecting {
			cancel()
		}
	}))
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.True(t, rep.Incomplete)
	assert.Contains(t, rep.Markdown(), "Incomplete report")
	assert.Contains(t, rep.Answer, "facts about a")
	require.Len(t, rep.Sources, 2)
	assert.Contains(t, rep.Answer, "[1](https://example.com/a)")
}

// citingBackend adds one cited source per query to the scripted backend.
type citingBackend struct{ *scripted }

func (b *citingBackend) Research(ctx context.Context, model llm.Model, q research.Query) (research.Finding, error) {
	f, err := b.scripted.Research(ctx, model, q)
	src := citationFor(q)
	f.Summary += " " + "[" + src.Label + "](" + src.ShortURL + ")"
	f.Sources = append(f.Sources, src)
	return f, err
}

func TestConfigErrors(t *testing.T) {
	_, err := research.New(research.Config{Backend: &scripted{}})
	require.ErrorIs(t, err, llm.ErrNoModel)
	_, err = research.New(research.Config{QueryModel: fake.New()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Backend")
	r := newResearcher(t, fake.New(), &scripted{}, research.Config{})
	_, err = r.Run(context.Background(), "   ")
	require.Error(t, err)
}

func TestFailingResearchNamesTheQueryAndBackend(t *testing.T) {
	m := fake.New(queries("a"))
	r := newResearcher(t, m, &research.SearchBackend{Searcher: failingSearcher{}}, research.Config{})
	rep, err := r.Run(context.Background(), "question")
	require.Error(t, err)
	require.ErrorIs(t, err, research.ErrSearchesFailed, "the only search failed: nothing was found")
	assert.Contains(t, err.Error(), `(search:broken): "a": search is down`)
	assert.True(t, rep.Incomplete)
}

type failingSearcher struct{}

func (failingSearcher) Name() string { return "broken" }
func (failingSearcher) Search(context.Context, string, search.Options) ([]search.Result, error) {
	return nil, fmt.Errorf("search is down")
}

func TestMermaid(t *testing.T) {
	r := newResearcher(t, fake.New(), &scripted{}, research.Config{})
	md := r.Graph().Mermaid()
	for _, line := range []string{"__start__ --> generate_query;", "generate_query -.-> web_research;", "web_research --> reflection;",
		"reflection -.-> web_research;", "reflection -.-> finalize_answer;", "finalize_answer --> __end__;"} {
		assert.Contains(t, md, line)
	}
}

func TestCancelDuringWebResearchKeepsFinishedFindings(t *testing.T) {
	m := fake.New(queries("fast", "slow"))
	b := &slowOne{}
	r := newResearcher(t, m, b, research.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	rep, err := r.Run(ctx, "question", research.Observe(func(a research.Activity) {
		if a.Kind == research.ActivitySearched && a.Query == "fast" {
			cancel()
		}
	}))
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, rep.Incomplete)
	assert.Contains(t, rep.Answer, "facts about fast")
	assert.Contains(t, rep.Answer, "[1](https://example.com/fast)")
	assert.NotContains(t, rep.Answer, "slow")
}

// slowOne researches "fast" at once and blocks on anything else.
type slowOne struct{}

func (slowOne) Name() string { return "slow-one" }
func (slowOne) Research(ctx context.Context, _ llm.Model, q research.Query) (research.Finding, error) {
	if q.Text != "fast" {
		<-ctx.Done()
		return research.Finding{}, ctx.Err()
	}
	src := citationFor(q)
	return research.Finding{Summary: "facts about fast [" + src.Label + "](" + src.ShortURL + ")", Sources: []citation.Source{src}}, nil
}

func TestReviewPausesBeforeEachRoundOfSearches(t *testing.T) {
	m := fake.New(
		queries("a", "b"),
		reflection(false, "what about c?", "c", "d"),
		reflection(true, ""),
		fake.Text("final").When(fake.Contains("well-researched answer")),
	)
	b := &scripted{}
	saver := graph.NewMemorySaver()
	r := newResearcher(t, m, b, research.Config{Checkpointer: saver, MaxLoops: 3})
	ctx := context.Background()
	var acts []research.ActivityKind
	observe := research.Observe(func(a research.Activity) { acts = append(acts, a.Kind) })

	rep, err := r.Run(ctx, "question", research.Thread("rv"), research.Review(true), observe)
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.NotNil(t, rep.Review)
	assert.Equal(t, research.ReviewInitial, rep.Review.Stage)
	assert.Equal(t, []string{"a", "b"}, rep.Review.Queries)
	assert.Equal(t, "question", rep.Review.Question)
	assert.Empty(t, b.queries(), "nothing is searched before the review")
	assert.Contains(t, rep.Markdown(), "Waiting for review")
	assert.Equal(t, research.ActivityReview, acts[len(acts)-1])

	saved, err := r.Saved(ctx, "rv")
	require.NoError(t, err)
	require.NotNil(t, saved.Review)
	assert.True(t, saved.Incomplete)

	// Approve as proposed; the follow-ups pause again, with the gap.
	rep, err = r.Resume(ctx, "rv", research.Answer(research.ReviewAnswer{}))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	assert.ElementsMatch(t, []string{"a", "b"}, b.queries())
	require.NotNil(t, rep.Review)
	assert.Equal(t, research.ReviewFollowUp, rep.Review.Stage)
	assert.Equal(t, []string{"c", "d"}, rep.Review.Queries)
	assert.Equal(t, "what about c?", rep.Review.KnowledgeGap)
	assert.Equal(t, 1, rep.Review.Loop)

	// Edit them: "a" was searched already and is dropped; "e" is new.
	rep, err = r.Resume(ctx, "rv", research.Answer(research.ReviewAnswer{Queries: []string{"c", "a", "e"}}))
	require.NoError(t, err)
	assert.Equal(t, "final", rep.Answer)
	assert.Equal(t, []string{"a", "b", "c", "e"}, rep.Queries)
	assert.ElementsMatch(t, []string{"a", "b", "c", "e"}, b.queries())
	assert.Len(t, m.Calls(), 4, "one query call, two reflections, one answer: nothing asked twice")
}

func TestReviewCanStopTheResearch(t *testing.T) {
	m := fake.New(
		queries("a"),
		reflection(false, "gap", "more"),
		fake.Text("final from a").When(fake.Contains("well-researched answer")),
	)
	b := &scripted{}
	r := newResearcher(t, m, b, research.Config{Checkpointer: graph.NewMemorySaver(), MaxLoops: 3})
	ctx := context.Background()
	_, err := r.Run(ctx, "question", research.Thread("st"), research.Review(true))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = r.Resume(ctx, "st", research.Answer(research.ReviewAnswer{Queries: []string{"  a2  "}}))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	rep, err := r.Resume(ctx, "st", research.Answer(research.ReviewAnswer{Stop: true}))
	require.NoError(t, err)
	assert.Equal(t, "final from a", rep.Answer)
	assert.Equal(t, []string{"a2"}, b.queries(), "the edited first round only")
	assert.Equal(t, []string{"a2"}, rep.Queries)
}

func TestReviewNeedsAThread(t *testing.T) {
	r := newResearcher(t, fake.New(), &scripted{}, research.Config{})
	_, err := r.Run(context.Background(), "q", research.Review(true))
	assert.ErrorContains(t, err, "Review needs a Checkpointer")
	_, err = r.Resume(context.Background(), "t")
	assert.ErrorContains(t, err, "Resume needs a Checkpointer")
}

func TestResumeAfterAFailureRepeatsNoFinishedWork(t *testing.T) {
	m := fake.New(
		queries("a", "b", "c"),
		reflection(true, ""),
		fake.Text("final").When(fake.Contains("well-researched answer")),
	)
	b := &flakyOnce{fail: "b"}
	r := newResearcher(t, m, b, research.Config{Checkpointer: graph.NewMemorySaver()})
	ctx := context.Background()
	rep, err := r.Run(ctx, "question", research.Thread("fl"))
	require.ErrorContains(t, err, "b is flaky")
	assert.True(t, rep.Incomplete)

	rep, err = r.Resume(ctx, "fl")
	require.NoError(t, err)
	assert.Equal(t, "final", rep.Answer)
	assert.Equal(t, "question", rep.Question)
	assert.Len(t, m.Calls(), 3, "the queries were not written twice")
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Equal(t, 2, b.calls["b"])
	assert.LessOrEqual(t, b.calls["a"], 1)
	assert.LessOrEqual(t, b.calls["c"], 1)
	assert.Equal(t, []string{"a", "b", "c"}, rep.Queries)
	saved, err := r.Saved(ctx, "fl")
	require.NoError(t, err)
	assert.False(t, saved.Incomplete)
	assert.Equal(t, "final", saved.Answer)
}

// TestSavedCountsTheUsageOfFinishedSearches: the report of a run that
// stopped mid-round counts what the searches that finished in that round
// spent, as it keeps their findings.
func TestSavedCountsTheUsageOfFinishedSearches(t *testing.T) {
	m := fake.New(
		queries("topic-a", "topic-b"),
		grounded("topic-a", "A is so.", "https://a.example/1", "a.example"),
		fake.Error(errors.New("search backend down")).When(fake.All(fake.Contains("topic-b"), fake.Contains("Google Search"))).After(50*time.Millisecond),
	)
	r := newResearcher(t, m, research.GeminiBackend{}, research.Config{Checkpointer: graph.NewMemorySaver()})
	ctx := context.Background()
	_, err := r.Run(ctx, "question", research.Thread("u"))
	require.ErrorContains(t, err, "search backend down")

	saved, err := r.Saved(ctx, "u")
	require.NoError(t, err)
	assert.True(t, saved.Incomplete)
	require.Len(t, saved.Sources, 1, "the finished search's findings")
	assert.Equal(t, llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 50, TotalTokens: 350}}, saved.Usage[llm.RoleResearch],
		"and what it spent")
	assert.Equal(t, 1, saved.Usage[llm.RoleQuery].Calls)
}

// flakyOnce fails the first research of one query.
type flakyOnce struct {
	mu    sync.Mutex
	fail  string
	calls map[string]int
}

func (b *flakyOnce) Name() string { return "flaky" }
func (b *flakyOnce) Research(ctx context.Context, _ llm.Model, q research.Query) (research.Finding, error) {
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	b.calls[q.Text]++
	n := b.calls[q.Text]
	b.mu.Unlock()
	if q.Text == b.fail && n == 1 {
		return research.Finding{}, fmt.Errorf("%s is flaky", q.Text)
	}
	return research.Finding{Summary: "facts about " + q.Text}, nil
}
