package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestOneLineAndCleanText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 0, "plain"},
		{"two\nlines\r\n  and\ttabs", 0, "two lines and tabs"},
		{"esc \x1b[31mred\x1b[0m", 0, "esc [31mred [0m"},
		{"abcdef", 4, "abc…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"line\u2028sep", 0, "line sep"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, oneLine(tt.in, tt.max), "%q", tt.in)
	}
	assert.Equal(t, "keep\nlines\tand tabs, drop [2J and bell", cleanText("keep\nlines\tand tabs, drop \x1b[2J and bell\a"))
}

func TestNumbers(t *testing.T) {
	for n, want := range map[int]string{0: "0", 812: "812", 5300: "5.3k", 1_250_000: "1.2M"} {
		assert.Equal(t, want, compact(n))
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4321: "-4,321"} {
		assert.Equal(t, want, thousands(n))
	}
	assert.Equal(t, "1 source", plural(1, "source", "sources"))
	assert.Equal(t, "0 sources", plural(0, "source", "sources"))
	assert.Equal(t, 15, tokens(llm.Usage{PromptTokens: 10, CompletionTokens: 5}))
	assert.Equal(t, 20, tokens(llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 20}))
}

func TestTimelineLines(t *testing.T) {
	var buf strings.Builder
	c := newConsole(&buf, false)
	start := time.Unix(0, 0)
	tl := newTimeline(c, start)
	now := start
	tl.now = func() time.Time { return now }

	tl.observe(research.Activity{Kind: research.ActivityGenerating})
	now = now.Add(1200 * time.Millisecond)
	tl.observe(research.Activity{Kind: research.ActivityQueries, Queries: []string{"a \x1b[2J", "b"},
		Usage: llm.UsageFor(llm.RoleQuery, llm.Usage{TotalTokens: 812})})
	tl.observe(research.Activity{Kind: research.ActivitySearching, Query: "a"})
	tl.observe(research.Activity{Kind: research.ActivitySearched, Query: "a", Sources: 3, Labels: []string{"uefa", "kicker"},
		Usage: llm.UsageFor(llm.RoleResearch, llm.Usage{TotalTokens: 4500})})
	tl.observe(research.Activity{Kind: research.ActivityReflected, Loop: 1, Reflection: &schemas.Reflection{KnowledgeGap: "gap"}})
	tl.observe(research.Activity{Kind: research.ActivityReflected, Loop: 2, Reflection: &schemas.Reflection{KnowledgeGap: "more"}, Queries: []string{"c"}})
	tl.observe(research.Activity{Kind: research.ActivityFailed, Node: "web_research", Error: "graph: node \"web_research\" failed in step 2: boom\nsecond line"})
	tl.observe(research.Activity{Kind: research.ActivityAnswered, Cited: 1, Dropped: 2})
	tl.observe(research.Activity{Kind: research.ActivityToken, Token: "ignored"})

	want := `[  0.0s      0 tok] Generating search queries
[  1.2s    812 tok] Queries: "a [2J" · "b"
[  1.2s   5.3k tok] Searched "a": 3 sources (uefa, kicker)
[  1.2s   5.3k tok] Reflection 1: not sufficient — gap: gap; answering with what was found (loop limit reached or nothing new to search)
[  1.2s   5.3k tok] Reflection 2: not sufficient — gap: more; follow-ups: "c"
[  1.2s   5.3k tok] web_research failed: boom second line
[  1.2s   5.3k tok] Answer: 1 source cited, 2 citations dropped
`
	assert.Equal(t, want, buf.String())

	// The summary says the wall-clock time of the command (the report's
	// own Timings measure its last stretch only, after a review).
	usage := llm.UsageByRole{"query": {Calls: 2, Usage: llm.Usage{TotalTokens: 1500}}}
	buf.Reset()
	tl.summary(&research.Report{Sources: make([]citation.Source, 2), Dropped: 1, Timings: research.Timings{Total: 300 * time.Millisecond},
		Usage: usage}, nil, "$0.0123")
	assert.Equal(t, "Done in 1.2s · 1,500 tokens · 2 LLM calls · 2 sources cited · 1 citation dropped · $0.0123\n", buf.String())

	// Paused before its answer: the sources gathered so far, none cited.
	buf.Reset()
	tl.summary(&research.Report{Sources: make([]citation.Source, 9), Gathered: 9, Incomplete: true, Review: &research.ReviewRequest{},
		Usage: usage}, graph.ErrInterrupted, "")
	assert.Equal(t, "Paused for review in 1.2s · 1,500 tokens · 2 LLM calls · 9 sources gathered so far\n", buf.String())

	// No source cited; a resumed run says when it began.
	buf.Reset()
	tl.began = start.Add(-10 * time.Minute)
	tl.summary(&research.Report{Usage: usage}, nil, "")
	assert.Equal(t, "Done in 1.2s · 1,500 tokens · 2 LLM calls · no source cited · 0 citations dropped · resumed (the run began 10m ago)\n", buf.String())
}

func TestConsoleSpinnerAndRedaction(t *testing.T) {
	var buf lockedBuffer
	c := newConsole(&buf, true)
	c.secrets = []string{"s3cr3t-value"}
	c.start("working")
	time.Sleep(2 * spinnerTick)
	c.line("a line with s3cr3t-value")
	_, err := c.Write([]byte("level=WARN msg=x\n"))
	require.NoError(t, err)
	c.stop()
	c.stop() // idempotent
	out := buf.String()
	assert.Contains(t, out, "working (")
	assert.Contains(t, out, "\r\033[Ka line with [redacted]\n")
	assert.Contains(t, out, "level=WARN msg=x\n")
	assert.True(t, strings.HasSuffix(out, "\r\033[K"), "the spinner line is cleared: %q", out)
	assert.NotContains(t, out, "s3cr3t-value")

	t.Run("quiet and not a terminal", func(t *testing.T) {
		var buf lockedBuffer
		c := newConsole(&buf, false)
		c.setQuiet(true)
		c.start("x")
		c.line("timeline")
		c.errorLine("bad")
		c.stop()
		assert.Equal(t, "research: bad\n", buf.String())
	})
}

func TestErrorLines(t *testing.T) {
	pe := &graph.PanicError{Value: "kaboom", Stack: []byte("goroutine 1 [running]:\nmain.main()")}
	assert.Equal(t, []string{"internal error: panic: kaboom (run with -v for the stack, and please report it)"},
		errorLines(&graph.NodeError{Node: "reflection", Step: 3, Err: pe}, false))
	assert.Contains(t, strings.Join(errorLines(pe, true), "\n"), "goroutine 1")

	ne := &graph.NodeError{Node: "web_research", Step: 2, Err: errors.New(`researching "q" with search:searxng: searxng: Service Unavailable (503)`)}
	assert.Equal(t, []string{`web_research failed: researching "q" with search:searxng: searxng: Service Unavailable (503)`}, errorLines(ne, false))
	assert.Equal(t, []string{"a", "b"}, errorLines(errors.Join(errors.New("a"), errors.New("b")), false))

	assert.Equal(t, []string{"the provider is rate limiting: try again later, use --effort low, or lower max_concurrency"},
		hints(fmt.Errorf("x: %w", &llm.APIError{Provider: "openai", Status: 429})))
	assert.Empty(t, hints(errors.New("plain")))
}

func TestJSONDocument(t *testing.T) {
	rep := &research.Report{
		Question: "q", Answer: "A [1](https://a.example/) \x1b[2J", Sources: []citation.Source{{Label: "a", URL: "https://a.example/", Title: "A"}},
		Gathered: 4, Dropped: 1, Queries: nil, Loops: 2, Backend: "search:searxng",
		Usage:   llm.UsageByRole{"query": {Calls: 1, Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 2}}},
		Timings: research.Timings{Total: 1500 * time.Microsecond, Steps: []research.StepTiming{{Node: "generate_query", Tasks: 1, Duration: time.Millisecond}}},
	}
	b, err := jsonDocument(app.RunRef{}, rep, map[string]string{"query": "openai:x"}, errors.New("stopped"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, app.ReportSchema, doc["schema"])
	assert.Equal(t, "A [1](https://a.example/) [2J", doc["answer"], "control characters are removed")
	assert.Equal(t, []any{}, doc["queries"], "never null")
	assert.Equal(t, true, doc["incomplete"], "a run error makes it incomplete")
	assert.Equal(t, "stopped", doc["error"])
	assert.Equal(t, 1.5, doc["timings"].(map[string]any)["total_ms"])
	assert.Equal(t, float64(5), doc["usage"].(map[string]any)["query"].(map[string]any)["total_tokens"])
	assert.Equal(t, []any{map[string]any{"number": float64(1), "title": "A", "url": "https://a.example/", "label": "a"}}, doc["sources"])
}

func TestVersionString(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v1.2.3"
	assert.True(t, strings.HasPrefix(versionString(), "research v1.2.3 ("), versionString())
	version = ""
	assert.Regexp(t, `^research \S+ \(.*go1\.`, versionString())
}

func TestKeysTable(t *testing.T) {
	s := keysTable()
	assert.Contains(t, s, "max_research_loops\n    default: 2\n    env:     DEEPGRAPH_MAX_RESEARCH_LOOPS\n    flag:    --loops\n")
	assert.Contains(t, s, "gemini_api_key\n    default: none\n    env:     DEEPGRAPH_GEMINI_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY\n    secret:  never printed\n")
}

// FuzzOneLine: untrusted text shown on a terminal line never carries a
// control character or a line break, and respects the length cap.
func FuzzOneLine(f *testing.F) {
	f.Add("plain", 10)
	f.Add("\x1b]0;title\a\x1b[2Jmulti\nline\u2028x", 5)
	f.Add("日本語テキスト", 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%200 + 1
		if max < 2 {
			max = 2
		}
		got := oneLine(s, max)
		assert.LessOrEqual(t, len([]rune(got)), max)
		for _, r := range got {
			assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029', "control %U in %q", r, got)
		}
		for _, r := range cleanText(s) {
			assert.False(t, (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0), "control %U", r)
		}
	})
}

func TestPausingAsker(t *testing.T) {
	var buf lockedBuffer
	c := newConsole(&buf, true)
	c.start("thinking")
	a := &pausingAsker{inner: askerFunc(func(ctx context.Context, q string) (string, error) {
		c.mu.Lock()
		spinning := c.stopCh != nil
		c.mu.Unlock()
		assert.False(t, spinning, "no spinner while the human is asked")
		return "yes", nil
	}), c: c}
	got, err := a.Ask(context.Background(), "ok?")
	require.NoError(t, err)
	assert.Equal(t, "yes", got)
	c.mu.Lock()
	spinning := c.stopCh != nil
	c.mu.Unlock()
	assert.True(t, spinning, "the spinner resumes")
	c.stop()
}

type askerFunc func(ctx context.Context, q string) (string, error)

func (f askerFunc) Ask(ctx context.Context, q string) (string, error) { return f(ctx, q) }

// Log records are one readable line each: the message, the attributes in
// brackets, the error last; internal package prefixes dropped, secrets
// masked, the timeline's stamp first, a repeated line said once.
func TestLineHandler(t *testing.T) {
	var buf strings.Builder
	c := newConsole(&buf, false)
	c.secrets = []string{"tvly-secret-123"}
	c.setStamp(func() string { return "[  1.0s    10 tok] " })
	log := slog.New(newLineHandler(c, slog.LevelWarn))
	log.Info("not shown")
	log.Warn("search: provider failed, trying the next", "provider", "tavily", "next", "searxng",
		"err", errors.New("tavily: HTTP 401 for key tvly-secret-123\nsecond line"))
	log.Warn("search: provider failed, trying the next", "provider", "tavily", "next", "searxng",
		"err", errors.New("tavily: HTTP 401 for key tvly-secret-123\nsecond line"))
	log.With("server", "files").WithGroup("mcp").Error("runstore: could not record", "run", "k3f9", "trace_id", "abc")
	assert.Equal(t, `[  1.0s    10 tok] Warning: search: provider failed, trying the next (provider: tavily, next: searxng): tavily: HTTP 401 for key [redacted] second line
[  1.0s    10 tok] Error: could not record (server: files, mcp.run: k3f9)
`, buf.String())
}
