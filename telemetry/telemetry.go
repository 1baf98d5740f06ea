package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/search"
)

// ScopeName is the instrumentation scope of deepgraph's spans.
const ScopeName = "github.com/deepgraph/deepgraph"

// Options say what the spans carry beyond the default, and where metrics
// go.
type Options struct {
	// RecordContent adds prompts, answers, tool arguments and tool output
	// to the spans (gen_ai.input.messages, gen_ai.output.messages, …). Off
	// by default: they may hold private data and are large.
	RecordContent bool
	// MeterProvider, when set, receives deepgraph's metrics (see the
	// package doc): the same wrappers that make the spans record them.
	// Nil or OpenTelemetry's no-op provider records none.
	MeterProvider metric.MeterProvider
}

// Telemetry makes deepgraph's spans with one TracerProvider and its
// metrics with one MeterProvider. A nil *Telemetry is valid and does
// nothing: its wrappers return what they are given, so code can wrap
// unconditionally and pay nothing when telemetry is off.
type Telemetry struct {
	tracer  trace.Tracer
	metrics *instruments // nil: no metrics
	opts    Options
}

// New returns a Telemetry making spans with tp and metrics with
// opts.MeterProvider. A nil tp, or OpenTelemetry's no-op provider
// (go.opentelemetry.io/otel/trace/noop), makes no spans; a nil or no-op
// MeterProvider no metrics. When neither would record anything New
// returns nil: nothing is wrapped and nothing is paid.
func New(tp trace.TracerProvider, opts Options) *Telemetry {
	in, err := newInstruments(opts.MeterProvider)
	if err != nil {
		otel.Handle(fmt.Errorf("deepgraph metrics: %w", err))
	}
	if _, ok := tp.(noop.TracerProvider); ok || tp == nil {
		if in == nil {
			return nil
		}
		tp = noop.NewTracerProvider()
	}
	return &Telemetry{tracer: tp.Tracer(ScopeName), metrics: in, opts: opts}
}

// Tracer returns the tracer deepgraph's spans are made with; nil for a nil
// Telemetry.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

type telemetryKey struct{}

// ContextWith returns ctx carrying t, for the code that builds models,
// searchers and tools below it (From), and with t's graph tracer attached
// (graph.ContextWithTracer): every graph run under it is traced. A nil t
// returns ctx as it is.
func ContextWith(ctx context.Context, t *Telemetry) context.Context {
	if t == nil {
		return ctx
	}
	ctx = context.WithValue(ctx, telemetryKey{}, t)
	return graph.ContextWithTracer(ctx, t.GraphTracer())
}

// From returns the Telemetry ctx carries (ContextWith), or nil: the
// wrappers of a nil Telemetry return what they are given.
func From(ctx context.Context) *Telemetry {
	t, _ := ctx.Value(telemetryKey{}).(*Telemetry)
	return t
}

// GraphTracer returns the graph.Tracer that makes a span per run, per
// superstep and per task attempt.
func (t *Telemetry) GraphTracer() graph.Tracer { return graphTracer{t} }

// Attribute keys of the graph spans.
const (
	AttrThread      = attribute.Key("graph.thread")
	AttrRunID       = attribute.Key("graph.run_id")
	AttrResume      = attribute.Key("graph.resume")
	AttrSubgraph    = attribute.Key("graph.subgraph")
	AttrStep        = attribute.Key("graph.step")
	AttrTasks       = attribute.Key("graph.step.tasks")
	AttrNode        = attribute.Key("graph.node")
	AttrTaskIndex   = attribute.Key("graph.task.index")
	AttrSend        = attribute.Key("graph.task.send")
	AttrAttempt     = attribute.Key("graph.task.attempt")
	AttrRetryReason = attribute.Key("graph.task.retry_reason")
	AttrInterrupted = attribute.Key("graph.interrupted")
	AttrErrorType   = attribute.Key("error.type")
)

type graphTracer struct{ t *Telemetry }

func (g graphTracer) StartRun(ctx context.Context, r graph.RunInfo) (context.Context, func(error)) {
	attrs := make([]attribute.KeyValue, 0, 4)
	if r.Thread != "" {
		attrs = append(attrs, AttrThread.String(r.Thread))
	}
	if r.RunID != "" {
		attrs = append(attrs, AttrRunID.String(r.RunID))
	}
	if r.Resume {
		attrs = append(attrs, AttrResume.Bool(true))
	}
	if r.Subgraph {
		attrs = append(attrs, AttrSubgraph.Bool(true))
	}
	ctx, span := g.t.tracer.Start(ctx, "graph.run", trace.WithAttributes(attrs...))
	return ctx, func(err error) { endGraph(span, err) }
}

func (g graphTracer) StartStep(ctx context.Context, s graph.StepInfo) (context.Context, func(error)) {
	ctx, span := g.t.tracer.Start(ctx, "graph.step", trace.WithAttributes(AttrStep.Int(s.Step), AttrTasks.Int(s.Tasks)))
	return ctx, func(err error) { endGraph(span, err) }
}

func (g graphTracer) StartTask(ctx context.Context, k graph.TaskInfo) (context.Context, func(error)) {
	attrs := []attribute.KeyValue{AttrNode.String(k.Node), AttrStep.Int(k.Step), AttrTaskIndex.Int(k.Index), AttrAttempt.Int(k.Attempt)}
	if k.Attempt > 1 && g.t.metrics != nil {
		g.t.metrics.retries.Add(ctx, 1, metric.WithAttributes(AttrNode.String(k.Node)))
	}
	if k.Send {
		attrs = append(attrs, AttrSend.Bool(true))
	}
	if k.RetryReason != nil {
		attrs = append(attrs, AttrRetryReason.String(k.RetryReason.Error()))
	}
	ctx, span := g.t.tracer.Start(ctx, "graph.node "+k.Node, trace.WithAttributes(attrs...))
	return ctx, func(err error) { endGraph(span, err) }
}

// endGraph ends a graph span: an interrupt is a pause, not a failure.
func endGraph(span trace.Span, err error) {
	if err != nil {
		if _, paused := errors.AsType[*graph.InterruptError](err); paused || errors.Is(err, graph.ErrInterrupted) {
			span.SetAttributes(AttrInterrupted.Bool(true))
		} else {
			fail(span, err)
		}
	}
	span.End()
}

// fail marks span failed with err: the error's message as the status, its
// type (error.type) and an exception event.
func fail(span trace.Span, err error) {
	span.SetAttributes(AttrErrorType.String(errorType(err)))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// errorType is the error.type of err: the name of the well-known
// condition it matches (the llm and search sentinels, cancellation,
// timeouts, graph conditions), else "_OTHER" as the semantic conventions
// say.
func errorType(err error) string {
	for _, k := range knownErrors {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "_OTHER"
}

var knownErrors = []struct {
	err  error
	name string
}{
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "timeout"},
	{graph.ErrTimeout, "timeout"},
	{llm.ErrTimeout, "timeout"},
	{llm.ErrRateLimited, "rate_limited"},
	{search.ErrRateLimited, "rate_limited"},
	{llm.ErrAuth, "auth"},
	{search.ErrAuth, "auth"},
	{llm.ErrBadRequest, "bad_request"},
	{search.ErrBadRequest, "bad_request"},
	{llm.ErrUnavailable, "unavailable"},
	{search.ErrUnavailable, "unavailable"},
	{llm.ErrStreamBroken, "stream_broken"},
	{llm.ErrUnsupported, "unsupported"},
	{search.ErrUnsupportedContent, "unsupported_content"},
	{graph.ErrRecursionLimit, "recursion_limit"},
}
