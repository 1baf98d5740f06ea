package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// metered is a Telemetry recording metrics only (no spans) into an
// in-memory reader.
func metered(t *testing.T) (*telemetry.Telemetry, func() map[string]metricdata.Metrics) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel := telemetry.New(nil, telemetry.Options{MeterProvider: mp})
	require.NotNil(t, tel, "a meter provider alone turns telemetry on")
	return tel, func() map[string]metricdata.Metrics {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		out := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			assert.Equal(t, telemetry.ScopeName, sm.Scope.Name)
			for _, m := range sm.Metrics {
				out[m.Name] = m
			}
		}
		return out
	}
}

// matches reports whether set has every attribute of want (key=value).
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

// count is the sum of the points of counter m whose attributes match want.
func count(t *testing.T, m metricdata.Metrics, want map[string]string) int64 {
	t.Helper()
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 counter, not %T", m.Name, m.Data)
	assert.True(t, sum.IsMonotonic, m.Name)
	var n int64
	for _, p := range sum.DataPoints {
		if matches(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histogram is the count and sum of the points of histogram m whose
// attributes match want.
func histogram(t *testing.T, m metricdata.Metrics, want map[string]string) (n uint64, total float64) {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram, not %T", m.Name, m.Data)
	for _, p := range h.DataPoints {
		if matches(p.Attributes, want) {
			n += p.Count
			total += p.Sum
		}
	}
	return n, total
}

func TestResearchRunMetrics(t *testing.T) {
	tel, collect := metered(t)
	r := researcher(t, tel)
	ctx := telemetry.ContextWith(context.Background(), tel)
	rep, err := r.Run(ctx, secretQuestion)
	require.NoError(t, err)
	specs := map[string]string{llm.RoleQuery: "gemini:gemini-2.5-flash", llm.RoleResearch: "gemini:gemini-2.5-flash",
		llm.RoleReflection: "gemini:gemini-2.5-pro", llm.RoleAnswer: "gemini:gemini-2.5-pro"}
	cost := llm.Prices{}.CostOf(rep.Usage, func(role string) string { return specs[role] })
	tel.RunEnded(ctx, "research", "done", cost)

	m := collect()
	tokens := m[telemetry.MetricTokenUsage]
	assert.Equal(t, "{token}", tokens.Unit)
	for role, want := range map[string][2]float64{
		llm.RoleQuery: {100, 10}, llm.RoleResearch: {200, 20}, llm.RoleReflection: {300, 30}, llm.RoleAnswer: {400, 40},
	} {
		model := specs[role][len("gemini:"):]
		for i, typ := range []string{"input", "output"} {
			n, sum := histogram(t, tokens, map[string]string{"deepgraph.role": role, "gen_ai.request.model": model,
				"gen_ai.token.type": typ, "gen_ai.provider.name": "gemini", "gen_ai.operation.name": "chat"})
			assert.Equal(t, uint64(1), n, "%s %s tokens: one call", role, typ)
			assert.Equal(t, want[i], sum, "%s %s tokens", role, typ)
		}
	}
	assert.Equal(t, int64(4), count(t, m[telemetry.MetricModelCalls], nil))
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricModelCalls], map[string]string{"deepgraph.role": llm.RoleAnswer, "gen_ai.request.model": "gemini-2.5-pro"}))
	n, secs := histogram(t, m[telemetry.MetricOperationDuration], nil)
	assert.Equal(t, uint64(4), n, "one duration per model call")
	assert.GreaterOrEqual(t, secs, 0.0)
	assert.Equal(t, "s", m[telemetry.MetricOperationDuration].Unit)
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricSearchCalls], map[string]string{"deepgraph.search.provider": "pages"}))
	n, _ = histogram(t, m[telemetry.MetricSearchDuration], map[string]string{"deepgraph.search.provider": "pages"})
	assert.Equal(t, uint64(1), n)
	assert.NotContains(t, m, telemetry.MetricErrors, "nothing failed")
	assert.NotContains(t, m, telemetry.MetricRetries, "nothing was retried")

	assert.Equal(t, int64(1), count(t, m[telemetry.MetricRuns], map[string]string{"deepgraph.run.kind": "research", "deepgraph.run.status": "done"}))
	usd, ok := m[telemetry.MetricCost].Data.(metricdata.Sum[float64])
	require.True(t, ok)
	assert.Equal(t, "USD", m[telemetry.MetricCost].Unit)
	byRole := map[string]float64{}
	for _, p := range usd.DataPoints {
		role, _ := p.Attributes.Value("deepgraph.role")
		model, _ := p.Attributes.Value("gen_ai.request.model")
		assert.Equal(t, specs[role.AsString()], "gemini:"+model.AsString())
		byRole[role.AsString()] += p.Value
	}
	require.Len(t, byRole, 4)
	for role, rc := range cost.ByRole {
		assert.InDelta(t, rc.USD, byRole[role], 1e-12, role)
	}
	pro := llm.Price{Input: 1.25, Output: 10}
	assert.InDelta(t, pro.Cost(llm.Usage{PromptTokens: 400, CompletionTokens: 40}), byRole[llm.RoleAnswer], 1e-12)

	data, err := json.Marshal(m)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "secret", "no prompt, query or answer text in metrics")
}

func TestFailedCallMetricsCountTheErrorByKindAndItsTokens(t *testing.T) {
	tel, collect := metered(t)
	apiErr := &llm.APIError{Provider: "openai", Status: 429, Message: "slow down", Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3}}
	m := tel.Model(fake.New(fake.Error(fmt.Errorf("%w: %w", llm.ErrRateLimited, apiErr))), "openai:gpt-4.1-mini", llm.RoleAnswer)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)

	got := collect()
	assert.Equal(t, int64(1), count(t, got[telemetry.MetricErrors], map[string]string{
		"deepgraph.operation": "chat", "error.type": "rate_limited", "deepgraph.role": llm.RoleAnswer, "gen_ai.request.model": "gpt-4.1-mini"}))
	assert.Equal(t, int64(1), count(t, got[telemetry.MetricModelCalls], map[string]string{"gen_ai.provider.name": "openai"}))
	n, _ := histogram(t, got[telemetry.MetricOperationDuration], map[string]string{"error.type": "rate_limited"})
	assert.Equal(t, uint64(1), n, "the failed call's duration carries error.type")
	_, in := histogram(t, got[telemetry.MetricTokenUsage], map[string]string{"gen_ai.token.type": "input"})
	_, out := histogram(t, got[telemetry.MetricTokenUsage], map[string]string{"gen_ai.token.type": "output"})
	assert.Equal(t, 7.0, in, "a failed call's reported tokens count")
	assert.Equal(t, 3.0, out)
}

func TestSearchReadToolAndRetryMetrics(t *testing.T) {
	tel, collect := metered(t)
	ctx := context.Background()

	failing := tel.Searcher(failingSearcher{})
	_, err := failing.Search(ctx, "q", search.Options{})
	require.Error(t, err)

	r := tel.Reader(fakeReader{map[string]*search.Page{"https://example.org/a": {Content: "abc"}}})
	_, err = r.Read(ctx, "https://example.org/a")
	require.NoError(t, err)
	_, err = r.Read(ctx, "https://missing.example/b")
	require.Error(t, err)

	echo, err := tools.Func("echo", "echoes", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (tools.Result, error) {
		return tools.Result{Output: in.Text}, nil
	})
	require.NoError(t, err)
	_, err = tel.Tool(echo).Run(ctx, json.RawMessage(`{"text":"x"}`))
	require.NoError(t, err)

	_, end := tel.GraphTracer().StartTask(ctx, graph.TaskInfo{Node: "web_research", Attempt: 1})
	end(errors.New("boom"))
	_, end = tel.GraphTracer().StartTask(ctx, graph.TaskInfo{Node: "web_research", Attempt: 2, RetryReason: errors.New("boom")})
	end(nil)

	m := collect()
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricSearchCalls], map[string]string{"deepgraph.search.provider": "down"}))
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricErrors], map[string]string{"deepgraph.operation": "search", "error.type": "unavailable"}))
	assert.Equal(t, int64(2), count(t, m[telemetry.MetricPageReads], nil))
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricErrors], map[string]string{"deepgraph.operation": "read_page"}))
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricToolCalls], map[string]string{"gen_ai.tool.name": "echo", "deepgraph.tool.failed": "false"}))
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricRetries], map[string]string{"graph.node": "web_research"}),
		"only the second attempt is a retry")
}

type failingSearcher struct{}

func (failingSearcher) Name() string { return "down" }

func (failingSearcher) Search(context.Context, string, search.Options) ([]search.Result, error) {
	return nil, fmt.Errorf("%w: search provider down", search.ErrUnavailable)
}

func TestUnknownPricesAreNoCost(t *testing.T) {
	tel, collect := metered(t)
	tel.RunEnded(context.Background(), "agent", "failed", llm.RunCost{
		ByRole:  map[string]llm.RoleCost{llm.RoleAgent: {Model: "compatible:local-x"}},
		Unknown: []string{llm.RoleAgent},
	})
	m := collect()
	assert.Equal(t, int64(1), count(t, m[telemetry.MetricRuns], map[string]string{"deepgraph.run.kind": "agent", "deepgraph.run.status": "failed"}))
	assert.NotContains(t, m, telemetry.MetricCost, "an unknown price is never recorded as $0")
}

func TestNoMeterProviderRecordsNothing(t *testing.T) {
	assert.Nil(t, telemetry.New(nil, telemetry.Options{MeterProvider: metricnoop.NewMeterProvider()}))
	assert.Nil(t, telemetry.New(nil, telemetry.Options{}))
	var tel *telemetry.Telemetry
	tel.RunEnded(context.Background(), "research", "done", llm.RunCost{}) // no panic, nothing recorded
	// Spans without metrics: the wrappers make spans and no metric points.
	tr, exp, _ := newTel(telemetry.Options{})
	_, err := tr.Model(fake.New(fake.Text("ok")), "gemini:gemini-2.5-flash", llm.RoleAnswer).
		Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.NoError(t, err)
	tr.RunEnded(context.Background(), "research", "done", llm.RunCost{})
	assert.Len(t, exp.GetSpans(), 1)
}

func TestConcurrentModelCallsShareTheWrapper(t *testing.T) {
	tel, collect := metered(t)
	m := tel.Model(fake.New(fake.Text("ok").WithTokens(2, 1).Repeat()), "gemini:gemini-2.5-flash", llm.RoleResearch)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	got := collect()
	assert.Equal(t, int64(8), count(t, got[telemetry.MetricModelCalls], map[string]string{"deepgraph.role": llm.RoleResearch}))
	_, in := histogram(t, got[telemetry.MetricTokenUsage], map[string]string{"gen_ai.token.type": "input"})
	assert.Equal(t, 16.0, in)
}

func TestCacheTokenMetrics(t *testing.T) {
	tel, collect := metered(t)
	reply := fake.Text("ok").WithUsage(llm.Usage{PromptTokens: 1000, CompletionTokens: 10, CachedTokens: 700, CacheWriteTokens: 200})
	m := tel.Model(fake.New(reply, reply), "anthropic:claude-sonnet-4-5", llm.RoleAgent)
	for range 2 {
		_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
		require.NoError(t, err)
	}
	got := collect()
	base := map[string]string{"deepgraph.role": llm.RoleAgent, "gen_ai.request.model": "claude-sonnet-4-5"}
	read, write := map[string]string{"gen_ai.token.type": telemetry.TokenTypeCacheRead}, map[string]string{"gen_ai.token.type": telemetry.TokenTypeCacheWrite}
	for k, v := range base {
		read[k], write[k] = v, v
	}
	assert.Equal(t, int64(1400), count(t, got[telemetry.MetricCacheTokens], read))
	assert.Equal(t, int64(400), count(t, got[telemetry.MetricCacheTokens], write))
}
