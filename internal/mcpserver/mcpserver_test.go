package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools"
)

func fullOptions(s *fakeSearch) Options {
	return Options{Version: "v1.2.3-test", Research: researcherOver(s), Searcher: s, DefaultEffort: "medium",
		Reader: fakeReader{"https://example.org/raft": {URL: "https://example.org/raft", Title: "Raft", Content: "Raft is a consensus algorithm."}}}
}

func TestListTools(t *testing.T) {
	cs := connect(t, context.Background(), fullOptions(newSearch()))
	init := cs.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, "deepgraph", init.ServerInfo.Name)
	assert.Equal(t, "v1.2.3-test", init.ServerInfo.Version)
	assert.Contains(t, init.Instructions, "deep_research")
	assert.NotContains(t, init.Instructions, "web_search is not offered")

	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	require.ElementsMatch(t, []string{"deep_research", "web_search", "fetch_page"}, keys(byName))

	var in struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Enum        []any  `json:"enum"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	remarshal(t, byName["deep_research"].InputSchema, &in)
	assert.Equal(t, "object", in.Type)
	assert.Equal(t, []string{"question"}, in.Required)
	assert.Contains(t, in.Properties["question"].Description, "At most 8192 characters.")
	assert.Equal(t, []any{"low", "medium", "high"}, in.Properties["effort"].Enum)
	assert.Contains(t, in.Properties["effort"].Description, "Default: medium")
	var out struct {
		Properties map[string]any `json:"properties"`
	}
	remarshal(t, byName["deep_research"].OutputSchema, &out)
	assert.ElementsMatch(t, []string{"question", "answer", "sources", "queries", "loops", "incomplete"}, keys(out.Properties))
	assert.Contains(t, byName["deep_research"].Description, "citations")
	assert.True(t, byName["deep_research"].Annotations.ReadOnlyHint)

	// web_search and fetch_page are the agent's tools, as they are.
	for _, name := range []string{"web_search", "fetch_page"} {
		var agentTool tools.Tool
		var err error
		if name == "web_search" {
			agentTool, err = tools.NewWebSearch(tools.WebSearchOptions{Searcher: newSearch()})
		} else {
			agentTool, err = tools.NewFetchPage(tools.FetchPageOptions{Reader: fakeReader{}})
		}
		require.NoError(t, err)
		assert.Equal(t, agentTool.Description(), byName[name].Description, name)
		want, err := json.Marshal(agentTool.Parameters())
		require.NoError(t, err)
		got, err := json.Marshal(byName[name].InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), name)
		assert.Nil(t, byName[name].OutputSchema, name)
	}
}

// Without a searcher there is no web_search, and the instructions say why.
func TestNoWebSearchWithoutSearcher(t *testing.T) {
	opts := fullOptions(newSearch())
	opts.Searcher = nil
	cs := connect(t, context.Background(), opts)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"deep_research", "fetch_page"}, names)
	assert.Contains(t, cs.InitializeResult().Instructions, "web_search is not offered: this server has no search provider or corpus configured")
}

var citationRe = regexp.MustCompile(`\[(\d+)\]\((https://[^)]+)\)`)

// deep_research returns the cited report, as text and as structured
// content, and sends a progress notification per timeline line.
func TestDeepResearch(t *testing.T) {
	s := newSearch()
	cs := connect(t, context.Background(), fullOptions(s))
	params := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	body := text(t, res)
	require.False(t, res.IsError, body)

	// The report: the answer with numbered citations into the Sources list.
	assert.True(t, strings.HasPrefix(body, "Raft elects a leader by randomized timeouts [1](https://"), body)
	answer, sources, ok := strings.Cut(body, "\n## Sources\n\n")
	require.True(t, ok, body)
	cites := citationRe.FindAllStringSubmatch(answer, -1)
	require.Len(t, cites, 4, "two sources for each of two queries")
	for i, c := range cites {
		assert.Equal(t, i+1, atoi(t, c[1]))
		assert.Contains(t, sources, c[1]+". [", "source %s is listed", c[1])
		assert.Contains(t, sources, "]("+c[2]+")")
		assert.Regexp(t, `^https://(example\.org|docs\.example\.net)/raft-`, c[2])
	}

	// The same as structured content.
	var out ResearchOutput
	remarshal(t, res.StructuredContent, &out)
	assert.Equal(t, "How does Raft elect a leader?", out.Question)
	assert.Equal(t, []string{"raft leader election", "raft log replication"}, out.Queries)
	assert.Equal(t, 1, out.Loops)
	assert.False(t, out.Incomplete)
	require.Len(t, out.Sources, 4)
	assert.Equal(t, cites[0][2], out.Sources[0].URL)
	assert.NotEmpty(t, out.Sources[0].Title)
	assert.True(t, strings.HasPrefix(out.Answer, "Raft elects a leader"))

	// Progress: one notification per timeline line, counting up. They were
	// sent before the result, but the client handles notifications on
	// their own goroutines.
	require.Eventually(t, func() bool { return len(cs.notes()) >= 7 }, 30*time.Second, 5*time.Millisecond)
	notes := cs.notes()
	slices.SortFunc(notes, func(a, b *mcp.ProgressNotificationParams) int { return int(a.Progress - b.Progress) })
	var msgs []string
	for i, n := range notes {
		assert.Equal(t, "tok-1", n.ProgressToken)
		assert.Equal(t, float64(i+1), n.Progress)
		msgs = append(msgs, n.Message)
	}
	require.Len(t, msgs, 7, "%q", msgs)
	assert.Equal(t, "Generating search queries", msgs[0])
	assert.Equal(t, `Queries: "raft leader election" · "raft log replication"`, msgs[1])
	assert.ElementsMatch(t, []string{`Searched "raft leader election": 3 sources (example, docs, third)`,
		`Searched "raft log replication": 3 sources (example, docs, third)`}, msgs[2:4])
	assert.Equal(t, "Reflection 1: sufficient", msgs[4])
	assert.Equal(t, "Finalizing the answer", msgs[5])
	assert.Equal(t, "Answer: 4 sources cited, 0 citations dropped", msgs[6])
}

// No progress token, no notifications; an effort sets the breadth.
func TestDeepResearchEffortWithoutProgress(t *testing.T) {
	s := newSearch()
	cs := connect(t, context.Background(), fullOptions(s))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep_research",
		Arguments: map[string]any{"question": "How does Raft elect a leader?", "effort": "low"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, []string{"raft leader election"}, s.seen(), "effort low searches one query")
	assert.Empty(t, cs.notes())
}

// Cancelling the call cancels the research: the search in flight sees its
// context end, and the server is free for the next call.
func TestDeepResearchCancelled(t *testing.T) {
	s := newSearch()
	s.block = "raft log replication"
	cs := connect(t, context.Background(), fullOptions(s))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?"}})
		errc <- err
	}()
	waitSearch(t, s, "raft log replication")
	cancel()
	select {
	case err := <-s.ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the research did not stop after the client cancelled")
	}
	assert.ErrorIs(t, <-errc, context.Canceled)

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "raft"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
}

// The client going away cancels the research too.
func TestDeepResearchClientGone(t *testing.T) {
	s := newSearch()
	s.block = "raft leader election"
	cs := connect(t, context.Background(), fullOptions(s))
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?"}})
	}()
	waitSearch(t, s, "raft leader election")
	require.NoError(t, cs.wire.cut())
	select {
	case err := <-s.ended:
		assert.Error(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the research did not stop after the client went away")
	}
}

// The server's shutdown (New's context) ends a call at once, with what it
// gathered, as a tool error.
func TestDeepResearchShutdown(t *testing.T) {
	s := newSearch()
	s.block = "raft log replication"
	ctx, stop := context.WithCancel(context.Background())
	cs := connect(t, ctx, fullOptions(s))
	resc := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?"}})
		assert.NoError(t, err)
		resc <- res
	}()
	waitSearch(t, s, "raft log replication", "raft leader election")
	time.Sleep(50 * time.Millisecond) // the other search finishes
	stop()
	var res *mcp.CallToolResult
	select {
	case res = <-resc:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end at the shutdown")
	}
	require.True(t, res.IsError)
	body := text(t, res)
	assert.Contains(t, body, "deep_research stopped while running: the server is shutting down")
	assert.Contains(t, body, "**Incomplete report.**")
	var out ResearchOutput
	remarshal(t, res.StructuredContent, &out)
	assert.True(t, out.Incomplete)
	assert.NotEmpty(t, out.Sources, "the search that finished")
}

func TestDeepResearchTimeout(t *testing.T) {
	s := newSearch()
	s.block = "raft leader election"
	opts := fullOptions(s)
	opts.Timeout = 200 * time.Millisecond
	cs := connect(t, context.Background(), opts)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, text(t, res), "deep_research did not finish within this server's timeout of 200ms")
}

// Failures are tool errors that say what is wrong — never protocol
// errors — and never show a secret.
func TestDeepResearchErrors(t *testing.T) {
	const secret = "sk-very-secret-key-1234"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	failing := newSearch()
	failing.err = errors.New("searxng: HTTP 503 from https://search.example/?key=" + secret)
	for _, c := range []struct {
		name  string
		opts  func(*Options)
		args  map[string]any
		wants []string
	}{
		{name: "a blank question", args: map[string]any{"question": "   "}, wants: []string{"the question is empty"}},
		{name: "no question", args: map[string]any{}, wants: []string{"question"}},
		{name: "a question over the limit", args: map[string]any{"question": strings.Repeat("é", 8193)}, wants: []string{"the question is 8193 characters long; this server takes at most 8192"}},
		{name: "an unknown effort", args: map[string]any{"question": "q?", "effort": "extreme"}, wants: []string{"effort"}},
		{name: "a researcher that cannot start", args: map[string]any{"question": "q?"},
			opts: func(o *Options) {
				o.Research = func(context.Context) (Researcher, error) {
					return nil, errors.New("gemini: API key " + secret + " was rejected (401)")
				}
			},
			wants: []string{"deep_research could not start: gemini: API key [redacted] was rejected (401)"}},
		{name: "a search that fails", args: map[string]any{"question": "q?"},
			opts:  func(o *Options) { o.Research = researcherOver(failing) },
			wants: []string{"deep_research failed: ", "503", "[redacted]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fullOptions(newSearch())
			opts.Redact = redact
			if c.opts != nil {
				c.opts(&opts)
			}
			cs := connect(t, context.Background(), opts)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep_research", Arguments: c.args})
			require.NoError(t, err, "a tool error, not a protocol error")
			require.True(t, res.IsError)
			body := text(t, res)
			t.Log(body)
			for _, w := range c.wants {
				assert.Contains(t, body, w)
			}
			assert.NotContains(t, body, secret)
		})
	}
}

// web_search and fetch_page answer as the agent's tools do.
func TestAgentTools(t *testing.T) {
	s := newSearch()
	cs := connect(t, context.Background(), fullOptions(s))
	call := func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res, text(t, res)
	}
	agentSearch, err := tools.NewWebSearch(tools.WebSearchOptions{Searcher: newSearch()})
	require.NoError(t, err)
	want, err := agentSearch.Run(context.Background(), json.RawMessage(`{"query":"raft consensus","max_results":2}`))
	require.NoError(t, err)

	res, body := call("web_search", map[string]any{"query": "raft consensus", "max_results": 2})
	assert.False(t, res.IsError)
	assert.Equal(t, want.Content(), body)
	assert.Contains(t, body, `2 results for "raft consensus" (fake):`)
	assert.Contains(t, body, "URL: https://example.org/raft-consensus")
	assert.NotContains(t, body, "third.example.com")

	res, body = call("web_search", map[string]any{"query": " "})
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: the query is empty", body)
	res, body = call("web_search", map[string]any{"query": "raft", "max_results": 99})
	assert.True(t, res.IsError)
	assert.Contains(t, body, "max_results")
	res, body = call("web_search", map[string]any{"query": "raft", "colour": "red"})
	assert.True(t, res.IsError, "unknown arguments are refused, as for a model")
	assert.Contains(t, body, "colour")

	s.err = errors.New("tavily: HTTP 503")
	res, body = call("web_search", map[string]any{"query": "raft"})
	assert.True(t, res.IsError)
	assert.Equal(t, "web_search failed: tavily: HTTP 503", body)

	res, body = call("fetch_page", map[string]any{"url": "https://example.org/raft"})
	assert.False(t, res.IsError)
	assert.Equal(t, "Title: Raft\nURL: https://example.org/raft\n\nRaft is a consensus algorithm.\n", body)
	res, body = call("fetch_page", map[string]any{"url": "https://example.org/raft", "offset": 5})
	assert.False(t, res.IsError)
	assert.Contains(t, body, "Showing characters 5 to 30 of 30.")
	res, body = call("fetch_page", map[string]any{"url": "https://example.org/missing"})
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: cannot read https://example.org/missing: HTTP 404 Not Found", body)
}

// fetch_page keeps the reader's SSRF guard: a loopback page is refused,
// and the page is never requested.
func TestFetchPageSSRFGuard(t *testing.T) {
	hits := 0
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		_, _ = w.Write([]byte("<html><title>private</title><body>secret intranet page</body></html>"))
	}))
	defer page.Close()
	reader, err := search.NewReader(search.ReaderConfig{})
	require.NoError(t, err)
	defer reader.Close()
	opts := fullOptions(newSearch())
	opts.Reader = reader
	cs := connect(t, context.Background(), opts)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fetch_page", Arguments: map[string]any{"url": page.URL + "/admin"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	body := text(t, res)
	assert.Contains(t, body, "refused")
	assert.Contains(t, body, "loopback")
	assert.NotContains(t, body, "secret intranet page")
	assert.Zero(t, hits)
}

// At most MaxRunning calls run at once; the others wait for a slot.
func TestDeepResearchSlots(t *testing.T) {
	s := newSearch()
	s.block = "raft leader election"
	opts := fullOptions(s)
	opts.MaxRunning = 1
	cs := connect(t, context.Background(), opts)
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	go func() {
		_, _ = cs.CallTool(ctx1, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "first?"}})
	}()
	waitSearch(t, s, "raft leader election")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	params := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "second?"}}
	params.SetProgressToken(7)
	_, err := cs.CallTool(ctx2, params)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, s.seen(), 2, "the second call never started: only the first's two searches ran")
	cancel1()
	<-s.ended
}

// waitSearch waits until the searches of queries have started.
func waitSearch(t *testing.T, s *fakeSearch, queries ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(queries) > 0 {
		select {
		case q := <-s.started:
			if i := slices.Index(queries, q); i >= 0 {
				queries = slices.Delete(queries, i, i+1)
			}
		case <-deadline:
			t.Fatalf("the searches for %q never started", queries)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, to), string(b))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
