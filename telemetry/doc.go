// Package telemetry traces and meters deepgraph with OpenTelemetry: a span per graph
// run, superstep and task attempt (through the engine's graph.Tracer hook),
// per model call (GenAI semantic conventions), per search, page read and
// tool call — one trace per run, since every span is started from the
// context of the work that caused it.
//
// It is off unless asked for: export.Start returns nil when neither the
// standard OTEL_* variables (see export.Config) nor a trace file ask for
// spans or metrics, and every
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
// # Metrics
//
// With Options.MeterProvider set, the same wrappers that make the spans
// record metric points (export.Start sets it from the OTEL_* variables;
// OTEL_METRICS_EXPORTER=none turns metrics off alone). Nil or the no-op
// MeterProvider records nothing. No point carries prompt, query, answer or
// URL text.
//
//	name                              kind       unit      attributes
//	gen_ai.client.operation.duration  histogram  s         gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, deepgraph.role, error.type (failed calls)
//	gen_ai.client.token.usage         histogram  {token}   as above, and gen_ai.token.type (input, output); a failed call's reported tokens too
//	deepgraph.model.calls             counter    {call}    gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, deepgraph.role
//	deepgraph.errors                  counter    {error}   deepgraph.operation (chat, search, read_page, execute_tool), error.type, and the call's model/provider/tool attributes
//	deepgraph.graph.task.retries      counter    {retry}   graph.node: task attempts after the first
//	deepgraph.search.calls            counter    {call}    deepgraph.search.provider
//	deepgraph.search.duration         histogram  s         deepgraph.search.provider, error.type (failed searches)
//	deepgraph.page.reads              counter    {page}    (none: hosts would be unbounded)
//	deepgraph.page.read.duration      histogram  s         error.type (failed reads)
//	deepgraph.tool.calls              counter    {call}    gen_ai.tool.name, deepgraph.tool.failed
//	deepgraph.runs                    counter    {run}     deepgraph.run.kind (research, agent, flow), deepgraph.run.status (done, failed, interrupted, needs-input)
//	deepgraph.cost                    counter    USD       deepgraph.role, gen_ai.provider.name, gen_ai.request.model; only models with a known price
//	deepgraph.model.cache_tokens      counter    {token}   as gen_ai.client.token.usage, gen_ai.token.type cache_read (input read from the prompt cache) or cache_write (written to it)
//
// error.type is the well-known condition an error matches (rate_limited,
// timeout, auth, bad_request, unavailable, canceled, …) or _OTHER. Runs
// and cost are recorded by RunEnded, called where a run finishes; the
// durations and token buckets are those the GenAI conventions advise.
//
// LogHandler adds trace_id and span_id to slog records logged inside a
// span. JSONExporter writes spans as OTLP/JSON lines for people without a
// collector (research --trace FILE).
package telemetry
