package mcpserver

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

// The tests' world: llm/fake models that write two queries, summaries
// citing their sources, a sufficient reflection, and an answer copying the
// summaries' citation markers; a fake search with two sources per query,
// one of which may block until its context ends.

var markerRe = regexp.MustCompile(`\[[^\]]+\]\(https://vertexaisearch\.cloud\.google\.com/id/[0-9]+-[0-9]+\)`)

// answerModel answers the final-answer prompt by citing every marker of the
// summaries; the rest goes to the script.
type answerModel struct{ script *fake.Model }

func newModel() *answerModel {
	return &answerModel{script: fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election", "raft log replication"}, Rationale: "two aspects"}).
			WithTokens(100, 20).When(fake.Schema("SearchQueryList")).Repeat(),
		fake.JSON(schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}}).WithTokens(300, 30).When(fake.Schema("Reflection")).Repeat(),
		fake.Text("The sources agree on the main point [S1] and add a detail [S2].").WithTokens(500, 40).
			When(fake.Contains("Summarise what the sources")).Repeat(),
	)}
}

func (m *answerModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	prompt := msgs[len(msgs)-1].Content
	if !strings.Contains(prompt, "well-researched answer") {
		return m.script.Generate(ctx, msgs, opts...)
	}
	var marks []string
	for _, mk := range markerRe.FindAllString(prompt, -1) {
		if !slices.Contains(marks, mk) {
			marks = append(marks, mk)
		}
	}
	text := "Raft elects a leader by randomized timeouts " + strings.Join(marks, " ") + "."
	return &llm.Response{Content: text, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 60, TotalTokens: 960}}, nil
}

// fakeSearch finds two sources per query. A query equal to block waits for
// its context to end, and reports that on ended.
type fakeSearch struct {
	block   string
	started chan string // each query as its search starts (buffered)
	ended   chan error  // the context's error of a blocked search
	err     error       // when set, every search fails with it

	mu      sync.Mutex
	queries []string
}

func newSearch() *fakeSearch {
	return &fakeSearch{started: make(chan string, 100), ended: make(chan error, 10)}
}

func (s *fakeSearch) Name() string { return "fake" }

func (s *fakeSearch) Search(ctx context.Context, query string, o search.Options) ([]search.Result, error) {
	s.mu.Lock()
	s.queries = append(s.queries, query)
	s.mu.Unlock()
	s.started <- query
	if s.err != nil {
		return nil, s.err
	}
	if s.block != "" && query == s.block {
		<-ctx.Done()
		s.ended <- ctx.Err()
		return nil, ctx.Err()
	}
	slug := strings.ReplaceAll(query, " ", "-")
	res := []search.Result{
		{Title: "Source on " + query, URL: "https://example.org/" + slug, Content: "What example.org says about " + query + "."},
		{Title: "Second source on " + query, URL: "https://docs.example.net/" + slug, Content: "More on " + query + "."},
		{Title: "Third source on " + query, URL: "https://third.example.com/" + slug, Snippet: "A third view of " + query + "."},
	}
	if o.MaxResults > 0 && len(res) > o.MaxResults {
		res = res[:o.MaxResults]
	}
	return res, nil
}

func (s *fakeSearch) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

// researcherOver builds the researcher of the world over s.
func researcherOver(s *fakeSearch) func(context.Context) (Researcher, error) {
	return func(context.Context) (Researcher, error) {
		return research.New(research.Config{QueryModel: newModel(), Backend: &research.SearchBackend{Searcher: s, ReadPages: -1},
			InitialQueries: 3, MaxLoops: 2})
	}
}

// fakeReader serves pages from a map.
type fakeReader map[string]*search.Page

func (r fakeReader) Read(_ context.Context, url string) (*search.Page, error) {
	if p, ok := r[url]; ok {
		return p, nil
	}
	return nil, errors.New("search: HTTP 404 Not Found")
}

// session is a client connected to a server in memory.
type session struct {
	*mcp.ClientSession
	wire     *wire
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

func (s *session) notes() []*mcp.ProgressNotificationParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.progress)
}

// connect builds a server with opts (New's context ctx) and connects a
// client to it.
func connect(t *testing.T, ctx context.Context, opts Options) *session {
	t.Helper()
	srv, err := New(ctx, opts)
	require.NoError(t, err)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	s := &session{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, req.Params)
			s.mu.Unlock()
		},
	})
	s.wire = &wire{Transport: ct}
	cs, err := client.Connect(context.Background(), s.wire, nil)
	require.NoError(t, err)
	s.ClientSession = cs
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() { _ = cs.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("the client could not close: a call is still in flight")
			_ = s.wire.cut()
		}
		done := make(chan struct{})
		go func() { _ = ss.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server session did not end after the client closed")
		}
	})
	return s
}

// text is the text of a result's content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		require.True(t, ok, "content %T", c)
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "\n")
}

// wire is the client's transport, which a test can cut as a client that
// dies would (no goodbye: ClientSession.Close waits for the calls in
// flight).
type wire struct {
	mcp.Transport
	conn mcp.Connection
}

func (w *wire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	w.conn = c
	return c, err
}

func (w *wire) cut() error { return w.conn.Close() }
