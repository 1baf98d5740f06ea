package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/deepgraph/deepgraph/llm"
)

// Metric names. The model-call metrics follow the OpenTelemetry GenAI
// semantic conventions; the rest are deepgraph's own.
const (
	MetricOperationDuration = "gen_ai.client.operation.duration" // histogram, s: one point per model call
	MetricTokenUsage        = "gen_ai.client.token.usage"        // histogram, {token}: per call and gen_ai.token.type
	MetricModelCalls        = "deepgraph.model.calls"            // counter, {call}
	MetricErrors            = "deepgraph.errors"                 // counter, {error}: by deepgraph.operation and error.type
	MetricRetries           = "deepgraph.graph.task.retries"     // counter, {retry}: task attempts after the first
	MetricSearchCalls       = "deepgraph.search.calls"           // counter, {call}
	MetricSearchDuration    = "deepgraph.search.duration"        // histogram, s
	MetricPageReads         = "deepgraph.page.reads"             // counter, {page}
	MetricPageReadDuration  = "deepgraph.page.read.duration"     // histogram, s
	MetricToolCalls         = "deepgraph.tool.calls"             // counter, {call}
	MetricRuns              = "deepgraph.runs"                   // counter, {run}: by deepgraph.run.kind and deepgraph.run.status
	MetricCost              = "deepgraph.cost"                   // counter, USD: by deepgraph.role and gen_ai.request.model, known prices only
	MetricCacheTokens       = "deepgraph.model.cache_tokens"     // counter, {token}: prompt tokens read from / written to a provider's cache, by gen_ai.token.type
)

// Token types (gen_ai.token.type) of deepgraph.model.cache_tokens: parts of a
// call's input tokens.
const (
	TokenTypeCacheRead  = "cache_read"  // read from the provider's prompt cache (llm.Usage.CachedTokens)
	TokenTypeCacheWrite = "cache_write" // written to it (llm.Usage.CacheWriteTokens)
)

// Attribute keys of the metrics beyond those of the spans.
const (
	AttrGenAITokenType = attribute.Key("gen_ai.token.type") // input, output
	AttrOperation      = attribute.Key("deepgraph.operation")
	AttrRunKind        = attribute.Key("deepgraph.run.kind")
	AttrRunStatus      = attribute.Key("deepgraph.run.status")
)

// Kinds of run (deepgraph.run.kind of deepgraph.runs): the command or
// endpoint that made it.
const (
	RunKindResearch = "research" // a deep-research run
	RunKindAgent    = "agent"    // an agent run
	RunKindFlow     = "flow"     // a planning flow (research flow)
)

// Operations (deepgraph.operation) of the errors counter.
const (
	OpChat     = "chat"
	OpSearch   = "search"
	OpReadPage = "read_page"
	OpTool     = "execute_tool"
)

// Bucket boundaries the GenAI semantic conventions advise.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// instruments are deepgraph's metric instruments, made once per Telemetry.
type instruments struct {
	opDuration, tokens, searchDuration, readDuration  metric.Float64Histogram
	modelCalls, errs, retries, searches, reads, tools metric.Int64Counter
	runs, cacheTokens                                 metric.Int64Counter
	cost                                              metric.Float64Counter
}

// newInstruments makes the instruments with mp; nil for a nil or no-op
// provider, so nothing is recorded and nothing paid.
func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	if mp == nil {
		return nil, nil
	}
	if _, ok := mp.(metricnoop.MeterProvider); ok {
		return nil, nil
	}
	m := mp.Meter(ScopeName)
	in := &instruments{}
	var errs []error
	hist := func(name, unit, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	count := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.opDuration = hist(MetricOperationDuration, "s", "Duration of GenAI operations (model calls)", durationBuckets)
	in.tokens = hist(MetricTokenUsage, "{token}", "Tokens used per model call, by gen_ai.token.type", tokenBuckets)
	in.searchDuration = hist(MetricSearchDuration, "s", "Duration of web searches", durationBuckets)
	in.readDuration = hist(MetricPageReadDuration, "s", "Duration of page reads", durationBuckets)
	in.modelCalls = count(MetricModelCalls, "{call}", "Model calls, failed ones included")
	in.errs = count(MetricErrors, "{error}", "Failed model calls, searches, page reads and tool calls, by deepgraph.operation and error.type")
	in.retries = count(MetricRetries, "{retry}", "Graph task attempts after the first, by node")
	in.searches = count(MetricSearchCalls, "{call}", "Web searches, failed ones included")
	in.reads = count(MetricPageReads, "{page}", "Page reads, failed ones included")
	in.tools = count(MetricToolCalls, "{call}", "Tool calls, failed ones included")
	in.runs = count(MetricRuns, "{run}", "Finished runs, by deepgraph.run.kind and deepgraph.run.status")
	in.cacheTokens = count(MetricCacheTokens, "{token}", "Input tokens read from (cache_read) or written to (cache_write) a provider's prompt cache, by gen_ai.token.type")
	var err error
	in.cost, err = m.Float64Counter(MetricCost, metric.WithUnit("USD"),
		metric.WithDescription("What model calls cost in US dollars, by deepgraph.role and gen_ai.request.model; calls of models without a known price are left out"))
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

// since is the seconds elapsed since start.
func since(start time.Time) float64 { return time.Since(start).Seconds() }

// failed counts one error of op.
func (in *instruments) failed(ctx context.Context, op string, err error, more ...attribute.KeyValue) {
	in.errs.Add(ctx, 1, metric.WithAttributes(append(more, AttrOperation.String(op), AttrErrorType.String(errorType(err)))...))
}

// modelCall records one model call: its count, duration (with error.type
// when it failed), the tokens it reported by type, and an error by kind.
// set is base's attribute.Set, made once per model: attribute.NewSet
// sorts the slice it is given, so base is never handed to it (nor
// appended to in place: its capacity is clipped).
func (in *instruments) modelCall(ctx context.Context, base []attribute.KeyValue, set attribute.Set, start time.Time, u llm.Usage, err error) {
	in.modelCalls.Add(ctx, 1, metric.WithAttributeSet(set))
	if err != nil {
		in.opDuration.Record(ctx, since(start), metric.WithAttributes(append(base, AttrErrorType.String(errorType(err)))...))
		in.failed(ctx, OpChat, err, base...)
	} else {
		in.opDuration.Record(ctx, since(start), metric.WithAttributeSet(set))
	}
	if u.PromptTokens > 0 {
		in.tokens.Record(ctx, float64(u.PromptTokens), metric.WithAttributes(append(base, AttrGenAITokenType.String("input"))...))
	}
	if out := max(u.CompletionTokens, u.TotalTokens-u.PromptTokens); out > 0 {
		in.tokens.Record(ctx, float64(out), metric.WithAttributes(append(base, AttrGenAITokenType.String("output"))...))
	}
	if u.CachedTokens > 0 {
		in.cacheTokens.Add(ctx, int64(u.CachedTokens), metric.WithAttributes(append(base, AttrGenAITokenType.String(TokenTypeCacheRead))...))
	}
	if u.CacheWriteTokens > 0 {
		in.cacheTokens.Add(ctx, int64(u.CacheWriteTokens), metric.WithAttributes(append(base, AttrGenAITokenType.String(TokenTypeCacheWrite))...))
	}
}

// Metered reports whether t records metrics (it has a MeterProvider).
func (t *Telemetry) Metered() bool { return t != nil && t.metrics != nil }

// RunEnded records a finished run: one deepgraph.runs point for kind
// (RunKindResearch, RunKindAgent, RunKindFlow) and status ("done", "failed",
// "interrupted", "needs-input", …), and what it cost by role and model —
// only the roles whose model's price is known (deepgraph.cost never counts
// an unknown price as 0). A nil Telemetry, or one without a
// MeterProvider, records nothing.
func (t *Telemetry) RunEnded(ctx context.Context, kind, status string, cost llm.RunCost) {
	if t == nil || t.metrics == nil {
		return
	}
	t.metrics.runs.Add(ctx, 1, metric.WithAttributes(AttrRunKind.String(kind), AttrRunStatus.String(status)))
	for role, rc := range cost.ByRole {
		if !rc.Known || rc.USD <= 0 {
			continue
		}
		attrs := []attribute.KeyValue{AttrRole.String(role)}
		if provider, model, err := llm.ParseSpec(rc.Model); err == nil {
			attrs = append(attrs, AttrGenAIProvider.String(provider), AttrGenAIRequestModel.String(model))
		} else {
			attrs = append(attrs, AttrGenAIRequestModel.String(rc.Model))
		}
		t.metrics.cost.Add(ctx, rc.USD, metric.WithAttributes(attrs...))
	}
}
