package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/internal/runstore"
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

// traced makes a server span "METHOD ROUTE" of each request of rt, a child
// of the caller's span when the request carries a traceparent, with the
// method, the route template and the status. 5xx answers mark the span
// failed, as the HTTP conventions say for servers. The handler's context
// carries the span, so a run it queues links to it (queue.add). Without
// telemetry, next is returned as it is.
func (s *Server) traced(rt route, next http.Handler) http.Handler {
	tel := s.opts.Telemetry
	if tel == nil {
		return next
	}
	tracer := tel.Tracer()
	name := rt.Method + " " + rt.Path
	attrs := []attribute.KeyValue{attrHTTPMethod.String(rt.Method), attrHTTPRoute.String(rt.Path)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
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

// traceRun starts the root span "run KIND" of a run the queue executes, in
// a trace of its own, linked to the request that queued it (a run outlives
// its request: it runs in the background after the answer 202). ctx then
// carries the telemetry, so the run's graph, model, search and tool spans
// are its descendants and the engine wraps the run's models and tools.
// Without telemetry, ctx is returned as it is.
func (q *queue) traceRun(ctx context.Context, j *job) (context.Context, func()) {
	if q.tel == nil {
		return ctx, func() {}
	}
	ctx = telemetry.ContextWith(ctx, q.tel)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(
		telemetry.AttrRunID.String(j.run.ID), telemetry.AttrThread.String(j.run.Thread), attrRunKind.String(string(j.run.Kind)))}
	if j.link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: j.link}))
	}
	ctx, span := q.tel.Tracer().Start(ctx, "run "+string(j.run.Kind), opts...)
	return ctx, func() { span.End() }
}

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
