package server

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/telemetry"
)

// Attribute keys of the request and run spans (HTTP semantic conventions,
// and deepgraph's own).
const (
	attrHTTPMethod = attribute.Key("http.request.method")
	attrHTTPRoute  = attribute.Key("http.route")
	attrHTTPStatus = attribute.Key("http.response.status_code")
	attrRunKind    = attribute.Key("deepgraph.run.kind")
)

// traceContext reads and writes W3C trace context (traceparent,
// tracestate): a request that carries one continues the caller's trace.
var traceContext = propagation.TraceContext{}

// traced makes a server span "METHOD ROUTE" of each request of a route
// (its pattern, "METHOD ROUTE"), a child
// of the caller's span when the request carries a traceparent, with the
// method, the route template and the status. 5xx answers mark the span
// failed, as the HTTP conventions say for servers. The handler's context
// carries the span, so a run it creates links to it (traceAPIRun). Without
// telemetry, next is returned as it is.
func (s *Server) traced(pattern string, next http.Handler) http.Handler {
	tel := s.opts.Telemetry
	if tel == nil {
		return next
	}
	tracer := tel.Tracer()
	method, path, _ := strings.Cut(pattern, " ")
	attrs := []attribute.KeyValue{attrHTTPMethod.String(method), attrHTTPRoute.String(path)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, pattern, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attrHTTPStatus.Int(status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// statusWriter remembers the status a handler answered with. It flushes
// (the event stream) and unwraps (http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// endRun records a stretch's end on the run's root span (traceRun), which
// ctx carries: deepgraph.run.status, and an error status with why when the
// run failed (an interrupted or waiting run is not an error). The span
// itself ends when the stretch does. Without telemetry ctx carries no
// span and nothing is recorded.
func endRun(ctx context.Context, status runstore.Status, why string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(telemetry.AttrRunStatus.String(string(status)))
	if status == runstore.StatusFailed {
		span.SetStatus(codes.Error, why)
	}
}

// runEnd records how a run of the Agent Server API ended: its status
// (LangGraph's: success, error, interrupted) and why it failed; what it
// spent, usage at prices for models, goes to the metrics.
type runEnd func(status string, err error, usage llm.UsageByRole, models map[string]string, prices llm.Prices)

// traceAPIRun starts the root span "run KIND" of a run of the Agent
// Server API, in a trace of its own linked to the request that created it
// (whose span ctx carries: a run outlives its request), and returns the
// context the run runs under — with the telemetry, so the run's graph,
// model, search and tool spans are its descendants and the engine wraps
// its models and tools — and what records its end (endRun, MeterRun).
// Without telemetry, ctx is returned as it is and the end meters nothing.
func traceAPIRun(ctx context.Context, tel *telemetry.Telemetry, kind string, cfg agentserver.RunConfig) (context.Context, runEnd) {
	if tel == nil {
		return ctx, func(string, error, llm.UsageByRole, map[string]string, llm.Prices) {}
	}
	link := trace.SpanContextFromContext(ctx)
	ctx = telemetry.ContextWith(ctx, tel)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(
		telemetry.AttrRunID.String(cfg.RunID), telemetry.AttrThread.String(cfg.ThreadID), attrRunKind.String(kind))}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	ctx, span := tel.Tracer().Start(ctx, "run "+kind, opts...)
	return ctx, func(status string, err error, usage llm.UsageByRole, models map[string]string, prices llm.Prices) {
		st, why := storeStatus[status], ""
		if err != nil && st == runstore.StatusFailed {
			why = err.Error()
		}
		endRun(ctx, st, why)
		span.End()
		app.MeterRun(ctx, kind, st, usage, models, prices)
	}
}
