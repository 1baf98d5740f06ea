package nodes_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

type queryArgs struct {
	Query string `json:"query"`
}

// pages is a search tool whose results name their pages.
func pages(results ...tools.Source) tools.Tool {
	return tools.MustFunc("web_search", "Search.", func(_ context.Context, a queryArgs) (tools.Result, error) {
		var b strings.Builder
		for _, r := range results {
			b.WriteString(r.Title + " " + r.URL + "\n")
		}
		return tools.Result{Output: b.String(), Sources: results}, nil
	})
}

func TestAgentAnswerCitesGatheredSourcesAndDropsInventedOnes(t *testing.T) {
	search := pages(
		tools.Source{URL: "https://go.dev/doc/go1.22", Title: "Go 1.22 Release Notes"},
		tools.Source{URL: "https://go.dev/blog/loopvar", Title: "Fixing For Loops in Go 1.22"},
	)
	fetch := tools.MustFunc("fetch_page", "Fetch.", func(_ context.Context, a struct {
		URL string `json:"url"`
	}) (tools.Result, error) {
		// The same page again, and one more: labels stay stable.
		return tools.Result{Output: "page text", Sources: []tools.Source{{URL: a.URL, Title: "Go 1.22 Release Notes"}, {URL: "https://go.dev/ref/spec", Title: "The Go Programming Language Specification"}}}, nil
	})
	answer := "Go 1.22 gives each loop iteration its own variable [S2]. " +
		"The [release notes](https://go.dev/doc/go1.22) list it; the spec agrees [S3]. " +
		"An [invented page](https://evil.example/cite-me) and a made-up label [S9] go. " +
		"Notes are in [notes.md](notes.md)."
	m := fake.New(
		fake.ToolCalls(fake.ToolCall("web_search", queryArgs{Query: "go 1.22 loop variable"})),
		fake.ToolCalls(fake.ToolCall("fetch_page", map[string]string{"url": "https://go.dev/doc/go1.22"})),
		fake.ToolCalls(terminate("success", answer)),
	)
	a := newAgent(t, m, nodes.AgentConfig{}, search, fetch)
	res, err := a.Run(context.Background(), "What changed for loops in Go 1.22?", nil)
	require.NoError(t, err)

	// The model saw each result's sources with stable labels.
	calls := m.Calls()
	require.Len(t, calls, 3)
	first := calls[1].LastMessage().Content
	assert.Contains(t, first, "[S1] https://go.dev/doc/go1.22 — Go 1.22 Release Notes")
	assert.Contains(t, first, "[S2] https://go.dev/blog/loopvar — Fixing For Loops in Go 1.22")
	second := calls[2].LastMessage().Content
	assert.Contains(t, second, "[S1] https://go.dev/doc/go1.22", "a page seen before keeps its label")
	assert.Contains(t, second, "[S3] https://go.dev/ref/spec")
	assert.Less(t, strings.Index(second, "</tool_output>"), strings.Index(second, "[S3]"), "labels come after the fenced output")

	// The answer: numbered citations of gathered pages only, the anchor
	// text of links kept, a file link kept as code, a Sources list.
	assert.Equal(t, 3, res.Gathered)
	assert.Equal(t, 2, res.Dropped, "the invented URL and the invented label: %s", res.Answer)
	require.Len(t, res.Sources, 3)
	assert.Equal(t, "https://go.dev/blog/loopvar", res.Sources[0].URL)
	assert.Equal(t, "https://go.dev/doc/go1.22", res.Sources[1].URL)
	assert.Equal(t, "https://go.dev/ref/spec", res.Sources[2].URL)
	assert.Contains(t, res.Answer, "its own variable [1](https://go.dev/blog/loopvar).")
	assert.Contains(t, res.Answer, "The release notes [2](https://go.dev/doc/go1.22) list it; the spec agrees [3](https://go.dev/ref/spec).")
	assert.Contains(t, res.Answer, "Notes are in `notes.md`.")
	assert.NotContains(t, res.Answer, "evil.example")
	assert.NotContains(t, res.Answer, "S9")
	assert.Contains(t, res.Answer, "An invented page and a made-up label")
	assert.True(t, strings.HasSuffix(res.Answer, "## Sources\n\n"+
		"1. [Fixing For Loops in Go 1.22](https://go.dev/blog/loopvar)\n"+
		"2. [Go 1.22 Release Notes](https://go.dev/doc/go1.22)\n"+
		"3. [The Go Programming Language Specification](https://go.dev/ref/spec)\n"), res.Answer)
}

func TestAgentAnswerWithoutSourcesLosesInventedLinks(t *testing.T) {
	m := fake.New(fake.Text("See [1](https://made.up/a) and https://example.com/x [S1]."))
	a := newAgent(t, m, nodes.AgentConfig{})
	res, err := a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentAnswered, res.Status)
	assert.NotContains(t, res.Answer, "made.up")
	assert.NotContains(t, res.Answer, "[S1]")
	assert.NotContains(t, res.Answer, "## Sources")
	assert.NotContains(t, res.Answer, "https://example.com/x", "a bare URL not gathered is shown as its host")
	assert.Equal(t, 3, res.Dropped, "the invented link, the bare URL and the label")
	assert.Empty(t, res.Sources)
}

// changing is a tools.Dynamic whose tools can be swapped mid-run.
type changing struct {
	c atomic.Pointer[tools.Collection]
}

func (d *changing) Collection(context.Context) (*tools.Collection, error) { return d.c.Load(), nil }

func TestAgentPicksUpDynamicToolChanges(t *testing.T) {
	echo := func(name string) tools.Tool {
		return tools.MustFunc(name, "Echo.", func(_ context.Context, a queryArgs) (tools.Result, error) {
			return tools.Text(name + ":" + a.Query), nil
		})
	}
	dyn := &changing{}
	first, err := tools.NewCollection(echo("srv.one"))
	require.NoError(t, err)
	dyn.c.Store(first)

	m := fake.New(
		fake.ToolCalls(fake.ToolCall("srv.one", queryArgs{Query: "a"})).When(fake.HasTool("srv.one")),
		fake.ToolCalls(fake.ToolCall("srv.two", queryArgs{Query: "b"})).When(fake.HasTool("srv.two")),
		fake.ToolCalls(terminate("success", "done")),
	)
	var n atomic.Int32
	a := newAgent(t, m, nodes.AgentConfig{Dynamic: []tools.Dynamic{dyn}}, lookup(t, &n, nil))
	var outputs []string
	res, err := a.Run(context.Background(), "task", func(e nodes.AgentEvent) {
		if e.Kind == nodes.AgentEventAct {
			outputs = append(outputs, e.Output)
			if e.Tool == "srv.one" {
				// The server changes its tools after the first call.
				second, err := tools.NewCollection(echo("srv.two"))
				require.NoError(t, err)
				dyn.c.Store(second)
			}
		}
	})
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	require.Len(t, outputs, 3)
	assert.Equal(t, []string{"srv.one:a", "srv.two:b"}, outputs[:2])
	calls := m.Calls()
	names := func(defs []schemas.ToolDef) []string {
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	assert.Equal(t, []string{"lookup", "terminate", "srv.one"}, names(calls[0].Request.Tools))
	assert.Equal(t, []string{"lookup", "terminate", "srv.two"}, names(calls[1].Request.Tools))
}
