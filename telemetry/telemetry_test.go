package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// pages is a searcher over fixed results, with full content, so research
// reads no page.
type pages []search.Result

func (pages) Name() string { return "pages" }

func (p pages) Search(context.Context, string, search.Options) ([]search.Result, error) {
	return append([]search.Result(nil), p...), nil
}

const secretQuestion = "How does Raft elect a leader? (secret-question-text)"

func newTel(opts telemetry.Options) (*telemetry.Telemetry, *tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return telemetry.New(tp, opts), exp, tp
}

func researcher(t *testing.T, tel *telemetry.Telemetry) *research.Researcher {
	t.Helper()
	model := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election"}}).When(fake.Schema("SearchQueryList")).WithTokens(100, 10),
		fake.Text("A follower that hears from no leader starts an election after a random timeout [S1].").When(fake.Contains("Summarise")).WithTokens(200, 20),
		fake.JSON(schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}}).When(fake.Schema("Reflection")).WithTokens(300, 30),
		fake.Text("A Raft follower that hears from no leader becomes a candidate after a random timeout "+
			"[raft](https://vertexaisearch.cloud.google.com/id/0-0) (secret-answer-text).").When(fake.Contains("well-researched answer")).WithTokens(400, 40),
	)
	searcher := pages{{Title: "Raft", URL: "https://raft.github.io/raft.pdf",
		Content: "Raft uses randomized election timeouts to elect a leader."}}
	r, err := research.New(research.Config{
		QueryModel:      tel.Model(model, "gemini:gemini-2.5-flash", llm.RoleQuery),
		ResearchModel:   tel.Model(model, "gemini:gemini-2.5-flash", llm.RoleResearch),
		ReflectionModel: tel.Model(model, "gemini:gemini-2.5-pro", llm.RoleReflection),
		AnswerModel:     tel.Model(model, "gemini:gemini-2.5-pro", llm.RoleAnswer),
		Backend:         &research.SearchBackend{Searcher: tel.Searcher(searcher)},
	})
	require.NoError(t, err)
	return r
}

// tree renders spans as indented "name" lines, children sorted by name,
// checking that every span belongs to one trace.
func tree(t *testing.T, spans tracetest.SpanStubs) string {
	t.Helper()
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
		require.Equal(t, spans[0].SpanContext.TraceID(), s.SpanContext.TraceID(), "span %s is in another trace", s.Name)
	}
	for _, s := range spans {
		p := ""
		if s.Parent.IsValid() {
			p = s.Parent.SpanID().String()
			require.True(t, ids[p], "span %s has a parent that was not exported", s.Name)
		}
		children[p] = append(children[p], s)
	}
	var b strings.Builder
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		kids := children[id]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Name < kids[j].Name })
		for _, k := range kids {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), k.Name)
			walk(k.SpanContext.SpanID().String(), depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func find(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func TestResearchRunIsOneTraceOfRunStepsNodesModelCallsAndSearches(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{})
	r := researcher(t, tel)
	ctx := telemetry.ContextWith(context.Background(), tel)
	rep, err := r.Run(ctx, secretQuestion)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Sources)

	spans := exp.GetSpans()
	assert.Equal(t, `graph.run
  graph.step
    graph.node generate_query
      chat gemini-2.5-flash
  graph.step
    graph.node web_research
      chat gemini-2.5-flash
      search pages
  graph.step
    graph.node reflection
      chat gemini-2.5-pro
  graph.step
    graph.node finalize_answer
      chat gemini-2.5-pro
`, tree(t, spans))

	chats := find(spans, "chat gemini-2.5-flash")
	require.Len(t, chats, 2)
	a := attrs(chats[0])
	assert.Equal(t, "gemini", a["gen_ai.system"].AsString())
	assert.Equal(t, "gemini-2.5-flash", a["gen_ai.request.model"].AsString())
	assert.Equal(t, "chat", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, int64(100), a["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(10), a["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, "query", a["deepgraph.role"].AsString())
	assert.Equal(t, []string{"stop"}, a["gen_ai.response.finish_reasons"].AsStringSlice())

	node := find(spans, "graph.node web_research")[0]
	na := attrs(node)
	assert.Equal(t, "web_research", na["graph.node"].AsString())
	assert.Equal(t, int64(2), na["graph.step"].AsInt64())
	assert.Equal(t, int64(1), na["graph.task.attempt"].AsInt64())
	assert.True(t, na["graph.task.send"].AsBool())
	sa := attrs(find(spans, "search pages")[0])
	assert.Equal(t, "pages", sa["deepgraph.search.provider"].AsString())
	assert.Equal(t, int64(1), sa["deepgraph.search.results"].AsInt64())

	// No prompt, answer or query text unless asked for.
	data, err := json.Marshal(spans)
	require.NoError(t, err)
	for _, secret := range []string{"secret-question-text", "secret-answer-text", "raft leader election", "Summarise"} {
		assert.NotContains(t, string(data), secret)
	}
}

func TestRecordContentAddsPromptsAnswersAndQueries(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{RecordContent: true})
	_, err := researcher(t, tel).Run(telemetry.ContextWith(context.Background(), tel), secretQuestion)
	require.NoError(t, err)
	data, err := json.Marshal(exp.GetSpans())
	require.NoError(t, err)
	for _, text := range []string{"secret-question-text", "secret-answer-text", "raft leader election"} {
		assert.Contains(t, string(data), text)
	}
}

func TestFailedModelCallRecordsErrorTypeStatusAndTokens(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{})
	apiErr := &llm.APIError{Provider: "openai", Status: 429, Message: "slow down", Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3}}
	m := tel.Model(fake.New(fake.Error(fmt.Errorf("%w: %w", llm.ErrRateLimited, apiErr))), "openai:gpt-4.1-mini", llm.RoleAnswer)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	a := attrs(spans[0])
	assert.Equal(t, "rate_limited", a["error.type"].AsString())
	assert.Equal(t, int64(429), a["http.response.status_code"].AsInt64())
	assert.Equal(t, int64(7), a["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, codes.Error, spans[0].Status.Code)
	assert.Equal(t, "openai", a["gen_ai.system"].AsString())
}

type fakeReader struct{ pages map[string]*search.Page }

func (f fakeReader) Read(ctx context.Context, u string) (*search.Page, error) {
	return f.ReadUpTo(ctx, u, 0)
}

func (f fakeReader) ReadUpTo(_ context.Context, u string, n int) (*search.Page, error) {
	p, ok := f.pages[u]
	if !ok {
		return nil, &search.APIError{Provider: "reader", Status: 404, Message: "not found"}
	}
	cp := *p
	if n > 0 && len(cp.Content) > n {
		cp.Content, cp.Partial = cp.Content[:n], true
	}
	return &cp, nil
}

func TestReaderSpansNameTheHostNotTheURL(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{})
	r := tel.Reader(fakeReader{map[string]*search.Page{"https://example.org/a?token=x": {Content: "0123456789", ContentType: "text/html"}}})
	_, err := r.ReadUpTo(context.Background(), "https://example.org/a?token=x", 4)
	require.NoError(t, err)
	_, err = r.Read(context.Background(), "https://missing.example/b")
	require.Error(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	a := attrs(spans[0])
	assert.Equal(t, "read_page", spans[0].Name)
	assert.Equal(t, "example.org", a["server.address"].AsString())
	assert.Equal(t, int64(4), a["deepgraph.page.bytes"].AsInt64())
	assert.True(t, a["deepgraph.page.partial"].AsBool())
	assert.Equal(t, int64(404), attrs(spans[1])["http.response.status_code"].AsInt64())
	data, _ := json.Marshal(spans)
	assert.NotContains(t, string(data), "token=x")
}

func TestToolSpans(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{})
	echo, err := tools.Func("echo", "echoes", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (tools.Result, error) {
		if in.Text == "" {
			return tools.Result{}, errors.New("nothing to echo")
		}
		return tools.Result{Output: in.Text}, nil
	})
	require.NoError(t, err)
	tool := tel.Tool(echo)
	assert.Equal(t, "echo", tool.Name())
	res, err := tool.Run(context.Background(), json.RawMessage(`{"text":"private-arg"}`))
	require.NoError(t, err)
	assert.Equal(t, "private-arg", res.Output)
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, "execute_tool echo", spans[0].Name)
	assert.Equal(t, "echo", attrs(spans[0])["gen_ai.tool.name"].AsString())
	data, _ := json.Marshal(spans)
	assert.NotContains(t, string(data), "private-arg")
}

func TestNilTelemetryWrapsNothing(t *testing.T) {
	var tel *telemetry.Telemetry
	m := fake.New(fake.Text("x"))
	assert.Same(t, m, tel.Model(m, "gemini:x", "query"))
	var s search.Searcher = pages{}
	assert.Equal(t, s, tel.Searcher(s))
	ctx := context.Background()
	assert.Equal(t, ctx, telemetry.ContextWith(ctx, nil))
	assert.Nil(t, telemetry.From(ctx))
}

func TestSearcherKeepsSkipper(t *testing.T) {
	tel, _, _ := newTel(telemetry.Options{})
	_, ok := tel.Searcher(skipping{}).(search.Skipper)
	assert.True(t, ok)
	_, ok = tel.Searcher(pages{}).(search.Skipper)
	assert.False(t, ok)
}

type skipping struct{ pages }

func (skipping) Skipped() []string { return []string{"a.pdf: unsupported"} }

func TestLogHandlerAddsTraceAndSpanIDs(t *testing.T) {
	tel, _, _ := newTel(telemetry.Options{})
	var b strings.Builder
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&b, nil))).With("k", "v")
	ctx, span := tel.Tracer().Start(context.Background(), "op")
	log.InfoContext(ctx, "inside")
	span.End()
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	var in, out map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &in))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &out))
	assert.Equal(t, span.SpanContext().TraceID().String(), in["trace_id"])
	assert.Equal(t, span.SpanContext().SpanID().String(), in["span_id"])
	assert.Equal(t, "v", in["k"])
	assert.NotContains(t, out, "trace_id")
}

func TestJSONExporterWritesOTLPJSON(t *testing.T) {
	var b strings.Builder
	exp := telemetry.NewJSONExporter(&b)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tel := telemetry.New(tp, telemetry.Options{})
	ctx, parent := tel.Tracer().Start(context.Background(), "parent")
	_, child := tel.Tracer().Start(ctx, "child")
	child.SetAttributes(attribute.Int("n", 42), attribute.StringSlice("reasons", []string{"stop"}), attribute.Bool("ok", true), attribute.Float64("f", 0.5))
	child.SetStatus(codes.Error, "broke")
	child.End()
	parent.End()
	require.NoError(t, tp.Shutdown(context.Background()))

	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2, "one line per exported batch (syncer: one span each)")
	var got []map[string]any
	for _, l := range lines {
		var td struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []map[string]any `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Scope struct{ Name string } `json:"scope"`
					Spans []map[string]any      `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &td))
		require.Len(t, td.ResourceSpans, 1)
		assert.Equal(t, telemetry.ScopeName, td.ResourceSpans[0].ScopeSpans[0].Scope.Name)
		got = append(got, td.ResourceSpans[0].ScopeSpans[0].Spans...)
	}
	c, p := got[0], got[1]
	assert.Equal(t, "child", c["name"])
	assert.Equal(t, parent.SpanContext().TraceID().String(), c["traceId"], "ids are hex")
	assert.Equal(t, parent.SpanContext().SpanID().String(), c["parentSpanId"])
	assert.NotContains(t, p, "parentSpanId")
	assert.Equal(t, map[string]any{"code": float64(2), "message": "broke"}, c["status"])
	assert.Equal(t, float64(1), c["kind"])
	assert.IsType(t, "", c["startTimeUnixNano"], "64-bit times are strings")
	wantAttrs := []any{
		map[string]any{"key": "n", "value": map[string]any{"intValue": "42"}},
		map[string]any{"key": "reasons", "value": map[string]any{"arrayValue": map[string]any{"values": []any{map[string]any{"stringValue": "stop"}}}}},
		map[string]any{"key": "ok", "value": map[string]any{"boolValue": true}},
		map[string]any{"key": "f", "value": map[string]any{"doubleValue": 0.5}},
	}
	assert.ElementsMatch(t, wantAttrs, c["attributes"])
	assert.True(t, slices.ContainsFunc(c["attributes"].([]any), func(a any) bool { return a.(map[string]any)["key"] == "n" }))
}

func TestNoopProviderIsNoTelemetry(t *testing.T) {
	assert.Nil(t, telemetry.New(noop.NewTracerProvider(), telemetry.Options{}))
}
