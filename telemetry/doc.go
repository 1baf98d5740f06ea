// Package telemetry traces deepgraph with OpenTelemetry: a span per graph
// run, superstep and task attempt (through the engine's graph.Tracer hook),
// per model call (GenAI semantic conventions), per search, page read and
// tool call — one trace per run, since every span is started from the
// context of the work that caused it.
//
// It is off unless asked for: Start returns nil when neither the standard
// OTEL_* variables (see Config) nor a trace file ask for spans, and every
// wrapper of a nil *Telemetry returns what it wraps, so a program pays
// nothing. Prompts, answers, queries, URLs and tool arguments stay out of
// spans unless Options.RecordContent is set.
//
//	p, err := export.Start(ctx, export.Config{TraceFile: flagTrace}) // telemetry/export
//	if err != nil { … }
//	defer p.Shutdown(context.WithoutCancel(ctx))
//	ctx = telemetry.ContextWith(ctx, p.Tel())        // graph runs below ctx are traced
//	model = telemetry.From(ctx).Model(model, "gemini:gemini-2.5-flash", llm.RoleAnswer)
//
// LogHandler adds trace_id and span_id to slog records logged inside a
// span. JSONExporter writes spans as OTLP/JSON lines for people without a
// collector (research --trace FILE).
package telemetry
