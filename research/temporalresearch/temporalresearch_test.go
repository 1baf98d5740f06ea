package temporalresearch_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

// The scripted run: two queries, one follow-up round, an answer citing one
// source of each query and one made-up source.
const question = "How does Raft elect a leader?"

// results is the fake web: every result has its text, so no page is read.
var results = map[string][]search.Result{
	"raft leader election": {
		{Title: "Raft paper", URL: "https://raft.github.io/raft.pdf", Content: "Leaders are elected with randomized timeouts."},
		{Title: "Raft blog", URL: "https://blog.example.org/raft", Content: "A candidate asks for votes."},
	},
	"raft log replication": {
		{Title: "etcd docs", URL: "https://etcd.io/docs/raft", Content: "The leader replicates its log."},
	},
	"raft split votes": {
		{Title: "Split votes", URL: "https://example.com/split-votes", Content: "Random timeouts make split votes rare."},
	},
}

// answer cites the first source of each of the three queries (short URLs
// <query id>-<result index>) and one that was never gathered.
const answer = "Raft elects a leader by randomized timeouts [raft](" + citation.ShortURLPrefix + "0-0), " +
	"the leader replicates its log [etcd](" + citation.ShortURLPrefix + "1-0), " +
	"and random timeouts make split votes rare [split](" + citation.ShortURLPrefix + "2-0) [made up](" + citation.ShortURLPrefix + "9-9)."

type fakeSearcher struct{}

func (fakeSearcher) Name() string { return "fake" }
func (fakeSearcher) Search(_ context.Context, q string, _ search.Options) ([]search.Result, error) {
	return append([]search.Result(nil), results[q]...), nil
}

// summary answers the summariser's call for query q.
func summary(q, text string) fake.Reply {
	return fake.Text(text).When(fake.All(fake.Contains("Summarise what the sources"), fake.Contains(`search query "`+q+`"`))).WithTokens(300, 50)
}

func reflection(sufficient bool, follow ...string) fake.Reply {
	if follow == nil {
		follow = []string{}
	}
	return fake.JSON(schemas.Reflection{IsSufficient: sufficient, KnowledgeGap: "split votes", FollowUpQueries: follow}).
		When(fake.Schema("Reflection")).WithTokens(200, 30)
}

// script is a whole run's model replies, the answer's last: every call
// is matched by what it asks, since a round's searches run in parallel.
func script(final fake.Reply) *fake.Model {
	return fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election", "raft log replication"}, Rationale: "both halves"}).
			When(fake.Schema("SearchQueryList")).WithTokens(100, 20),
		summary("raft leader election", "Leaders are elected with randomized timeouts [S1]; a candidate asks for votes [S2]."),
		summary("raft log replication", "The leader replicates its log [S1]."),
		summary("raft split votes", "Random timeouts make split votes rare [S1]."),
		reflection(false, "raft split votes"),
		reflection(true),
		final,
	)
}

func answerReply() fake.Reply {
	return fake.Text(answer).When(fake.Contains("well-researched answer")).WithTokens(400, 80)
}

// newResearcher is a Researcher on a fresh copy of the script, whose answer
// is final.
func newResearcher(t testing.TB, final fake.Reply) *research.Researcher {
	t.Helper()
	r, err := research.New(research.Config{
		QueryModel: script(final),
		Backend:    &research.SearchBackend{Searcher: fakeSearcher{}},
		Now:        func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) },
	})
	require.NoError(t, err)
	return r
}

// quiet is a logger for the SDK that keeps its warnings and drops its
// DEBUG and INFO lines.
func quiet() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// silent is a logger for the SDK that drops everything, for failures a
// test expects (a replay's workflow panic, with its stack).
func silent() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
}

// newEnv is the SDK's in-process test environment with r's research
// workflow and activities registered.
func newEnv(t *testing.T, r *research.Researcher) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	x, err := temporalresearch.New(r, temporalresearch.Options{Models: map[string]string{"query": "fake:model"}})
	require.NoError(t, err)
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(quiet())
	env := ts.NewTestWorkflowEnvironment()
	x.Register(env)
	return env
}

// progress reads the run's whole timeline through the progress query.
func progress(t *testing.T, env *testsuite.TestWorkflowEnvironment) temporalgraph.Progress {
	t.Helper()
	v, err := env.QueryWorkflow(temporalgraph.QueryProgress, 0)
	require.NoError(t, err)
	var p temporalgraph.Progress
	require.NoError(t, v.Get(&p))
	return p
}

func TestResearchWorkflowEndToEnd(t *testing.T) {
	env := newEnv(t, newResearcher(t, answerReply()))
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: question})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out *temporalresearch.Outcome
	require.NoError(t, env.GetWorkflowResult(&out))
	require.NotNil(t, out)
	assert.Equal(t, map[string]string{"query": "fake:model"}, out.Models)
	rep := out.Report
	require.NotNil(t, rep)

	assert.Equal(t, question, rep.Question)
	assert.False(t, rep.Incomplete)
	assert.Equal(t, "search:fake", rep.Backend)
	assert.Equal(t, []string{"raft leader election", "raft log replication", "raft split votes"}, rep.Queries)
	assert.Equal(t, 2, rep.Loops)
	assert.Equal(t, 4, rep.Gathered)
	assert.Equal(t, 1, rep.Dropped, "the made-up citation was removed")
	assert.Contains(t, rep.Answer, "[1](https://raft.github.io/raft.pdf)")
	assert.Contains(t, rep.Answer, "[2](https://etcd.io/docs/raft)")
	assert.Contains(t, rep.Answer, "[3](https://example.com/split-votes)")
	assert.NotContains(t, rep.Answer, citation.ShortURLPrefix)
	assert.NotContains(t, rep.Answer, "made up")
	// Every cited source is one the run gathered.
	require.Len(t, rep.Sources, 3)
	for _, s := range rep.Sources {
		found := false
		for _, rs := range results {
			for _, r := range rs {
				found = found || r.URL == s.URL
			}
		}
		assert.True(t, found, "cited %s was not gathered", s.URL)
	}
	// Usage per role: one query call, three summaries, two reflections, one
	// answer.
	assert.Equal(t, 1, rep.Usage[llm.RoleQuery].Calls)
	assert.Equal(t, 3, rep.Usage[llm.RoleResearch].Calls)
	assert.Equal(t, 1050, rep.Usage[llm.RoleResearch].Usage.TotalTokens)
	assert.Equal(t, 2, rep.Usage[llm.RoleReflection].Calls)
	assert.Equal(t, 1, rep.Usage[llm.RoleAnswer].Calls)
	assert.Equal(t, 480, rep.Usage[llm.RoleAnswer].Usage.TotalTokens)

	// The same script in-process gives the same report, but for the
	// timings, which only an in-process run measures.
	local, err := newResearcher(t, answerReply()).Run(context.Background(), question)
	require.NoError(t, err)
	assert.Equal(t, local.Answer, rep.Answer)
	assert.Equal(t, local.Sources, rep.Sources)
	assert.Equal(t, local.Queries, rep.Queries)
	assert.Equal(t, local.Loops, rep.Loops)
	assert.Equal(t, local.Usage, rep.Usage)
	local.Timings = research.Timings{}
	rep.Timings = research.Timings{}
	assert.Equal(t, local, rep)

	// The progress query's timeline, as a client following the run reads
	// it: research activities, without the answer's tokens.
	p := progress(t, env)
	assert.True(t, p.Done)
	assert.Empty(t, p.Err)
	assert.Empty(t, p.Running)
	assert.Empty(t, p.Interrupts)
	assert.Equal(t, len(p.Entries), p.Next)
	var kinds []research.ActivityKind
	var searched []string
	for i, e := range p.Entries {
		assert.Equal(t, i, e.Seq)
		a, err := temporalgraph.Decode[research.Activity](e)
		require.NoError(t, err)
		assert.Equal(t, e.Node, a.Node)
		assert.NotEqual(t, research.ActivityToken, a.Kind, "no token on the timeline")
		kinds = append(kinds, a.Kind)
		switch a.Kind {
		case research.ActivitySearching:
			assert.NotEmpty(t, a.Query)
		case research.ActivitySearched:
			searched = append(searched, a.Query)
			assert.Positive(t, a.Sources)
		case research.ActivityReflected:
			require.NotNil(t, a.Reflection)
		case research.ActivityAnswered:
			assert.Equal(t, 3, a.Cited)
			assert.Equal(t, 1, a.Dropped)
			assert.Equal(t, 1, a.Usage[llm.RoleAnswer].Calls)
		}
	}
	assert.ElementsMatch(t, rep.Queries, searched)
	count := func(k research.ActivityKind) int {
		n := 0
		for _, got := range kinds {
			if got == k {
				n++
			}
		}
		return n
	}
	assert.Equal(t, map[research.ActivityKind]int{
		research.ActivityGenerating: 1, research.ActivityQueries: 1,
		research.ActivitySearching: 3, research.ActivitySearched: 3,
		research.ActivityReflecting: 2, research.ActivityReflected: 2,
		research.ActivityFinalizing: 1, research.ActivityAnswered: 1,
	}, map[research.ActivityKind]int{
		research.ActivityGenerating: count(research.ActivityGenerating), research.ActivityQueries: count(research.ActivityQueries),
		research.ActivitySearching: count(research.ActivitySearching), research.ActivitySearched: count(research.ActivitySearched),
		research.ActivityReflecting: count(research.ActivityReflecting), research.ActivityReflected: count(research.ActivityReflected),
		research.ActivityFinalizing: count(research.ActivityFinalizing), research.ActivityAnswered: count(research.ActivityAnswered),
	})
	assert.Len(t, kinds, 14, "nothing else: %v", kinds)
	assert.Equal(t, []research.ActivityKind{research.ActivityGenerating, research.ActivityQueries}, kinds[:2])
	assert.Equal(t, []research.ActivityKind{research.ActivityFinalizing, research.ActivityAnswered}, kinds[len(kinds)-2:])
}

func TestFailedAnswerGivesAnIncompleteReport(t *testing.T) {
	refused := &llm.APIError{Provider: "fake", Status: 400, Message: "the answer model refuses"}
	env := newEnv(t, newResearcher(t, fake.Error(refused).When(fake.Contains("well-researched answer"))))
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: question})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "finalize_answer")
	assert.Contains(t, err.Error(), "the answer model refuses")
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.True(t, app.NonRetryable(), "a failed run is not retried")
	assert.Equal(t, `graph: node "finalize_answer" failed in step 6: fake: Bad Request (400): the answer model refuses`, app.Message())

	out, ok := temporalresearch.OutcomeOf(err)
	require.True(t, ok, "the error carries the report: %v", err)
	rep := out.Report
	assert.True(t, rep.Incomplete)
	assert.Equal(t, question, rep.Question)
	assert.Equal(t, []string{"raft leader election", "raft log replication", "raft split votes"}, rep.Queries)
	assert.Equal(t, 2, rep.Loops)
	// The answer is the findings' summaries, their citations resolved.
	for _, s := range []string{"randomized timeouts", "replicates its log", "split votes rare"} {
		assert.Contains(t, rep.Answer, s)
	}
	assert.Contains(t, rep.Answer, "(https://raft.github.io/raft.pdf)")
	assert.NotContains(t, rep.Answer, citation.ShortURLPrefix)
	assert.Len(t, rep.Sources, 4)
	assert.Equal(t, 3, rep.Usage[llm.RoleResearch].Calls)

	p := progress(t, env)
	assert.True(t, p.Done)
	assert.Contains(t, p.Err, "the answer model refuses")
	last, err := temporalgraph.Decode[research.Activity](p.Entries[len(p.Entries)-1])
	require.NoError(t, err)
	assert.Equal(t, research.ActivityFailed, last.Kind)
	assert.Equal(t, research.NodeFinalizeAnswer, last.Node)

	_, ok = temporalresearch.OutcomeOf(refused)
	assert.False(t, ok, "another error carries no report")
}

func TestEmptyQuestionIsRefused(t *testing.T) {
	model := fake.New()
	r, err := research.New(research.Config{QueryModel: model, Backend: &research.SearchBackend{Searcher: fakeSearcher{}}})
	require.NoError(t, err)
	env := newEnv(t, r)
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: " \n\t"})
	require.True(t, env.IsWorkflowCompleted())
	err = env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the question is empty")
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.True(t, app.NonRetryable())
	assert.Empty(t, model.Calls(), "no model was called")

	// A client refuses it before it reaches Temporal.
	_, err = temporalresearch.Start(context.Background(), nil, client.StartWorkflowOptions{TaskQueue: "q"}, temporalresearch.Request{Question: "  "})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the question is empty")
}

// A search that fails the run does not take the finished searches of its
// round with it: the incomplete report has their findings, as in-process.
func TestFailedSearchKeepsTheRoundsOtherFindings(t *testing.T) {
	refused := &llm.APIError{Provider: "fake", Status: 400, Message: "the summariser refuses"}
	m := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election", "raft log replication"}}).When(fake.Schema("SearchQueryList")),
		summary("raft leader election", "Leaders are elected with randomized timeouts [S1]."),
		fake.Error(refused).When(fake.Contains(`search query "raft log replication"`)),
	)
	r, err := research.New(research.Config{QueryModel: m, Backend: &research.SearchBackend{Searcher: fakeSearcher{}}})
	require.NoError(t, err)
	env := newEnv(t, r)
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: question})
	err = env.GetWorkflowError()
	require.ErrorContains(t, err, "the summariser refuses")
	out, ok := temporalresearch.OutcomeOf(err)
	require.True(t, ok, "the error carries the report: %v", err)
	rep := out.Report
	assert.True(t, rep.Incomplete)
	assert.Contains(t, rep.Answer, "randomized timeouts")
	assert.Contains(t, rep.Answer, "(https://raft.github.io/raft.pdf)")
}

// blockedAtReflection is a researcher whose reflection never answers: a run
// stops there only by its timeout or a cancellation.
func blockedAtReflection(t *testing.T) *research.Researcher {
	t.Helper()
	m := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election"}}).When(fake.Schema("SearchQueryList")),
		summary("raft leader election", "Leaders are elected with randomized timeouts [S1]."),
		fake.JSON(schemas.Reflection{IsSufficient: true}).When(fake.Schema("Reflection")).Block(),
	)
	r, err := research.New(research.Config{QueryModel: m, Backend: &research.SearchBackend{Searcher: fakeSearcher{}}})
	require.NoError(t, err)
	return r
}

// A run past its Timeout stops and fails with the report of what it had.
func TestTimeoutGivesAnIncompleteReport(t *testing.T) {
	env := newEnv(t, blockedAtReflection(t))
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: question, Timeout: time.Second})
	err := env.GetWorkflowError()
	require.ErrorContains(t, err, "took longer than its timeout of 1s")
	assert.True(t, temporalresearch.TimedOut(err))
	assert.False(t, temporalresearch.TimedOut(errors.New("took longer than its timeout")), "by its type, not its words")
	out, ok := temporalresearch.OutcomeOf(err)
	require.True(t, ok, "the error carries the report: %v", err)
	assert.True(t, out.Report.Incomplete)
	assert.Contains(t, out.Report.Answer, "randomized timeouts")
}

// A cancelled run ends cancelled, with the report of what it had.
func TestCancelledRunCarriesItsReport(t *testing.T) {
	env := newEnv(t, blockedAtReflection(t))
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(temporalresearch.WorkflowName, temporalresearch.Request{Question: question})
	err := env.GetWorkflowError()
	var cancelled *temporal.CanceledError
	require.ErrorAs(t, err, &cancelled)
	out, ok := temporalresearch.OutcomeOf(err)
	require.True(t, ok, "the error carries the report: %v", err)
	assert.True(t, out.Report.Incomplete)
	assert.Contains(t, out.Report.Answer, "randomized timeouts")
}
