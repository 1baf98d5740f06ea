package telemetry

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/tools"
)

// Attribute keys of tool-call spans (GenAI semantic conventions).
const (
	AttrToolName      = attribute.Key("gen_ai.tool.name")
	AttrToolArguments = attribute.Key("gen_ai.tool.call.arguments")
	AttrToolResult    = attribute.Key("gen_ai.tool.call.result")
	AttrToolFailed    = attribute.Key("deepgraph.tool.failed")
)

// Tool wraps tool so that each call is a span "execute_tool NAME"
// (gen_ai.operation.name execute_tool, gen_ai.tool.name). A Result with
// Error set marks deepgraph.tool.failed (the model sees the failure; the
// span is not an error); a returned error fails the span. Arguments and
// output are recorded only with Options.RecordContent. A nil Telemetry
// returns tool. A tool that sets its own call bound (tools.Bounded: a
// tools.WithTimeout, deep_research, ask_human) keeps it: the wrapped tool
// is Bounded with the same CallTimeout, so a Collection of traced tools
// bounds their calls as it would the tools'.
func (t *Telemetry) Tool(tool tools.Tool) tools.Tool {
	if t == nil || tool == nil {
		return tool
	}
	traced := &tracedTool{Tool: tool, t: t, name: "execute_tool " + tool.Name()}
	if b, ok := tool.(tools.Bounded); ok {
		return &boundedTracedTool{tracedTool: traced, bound: b}
	}
	return traced
}

// boundedTracedTool is a traced tools.Bounded: its bound is asked of the
// wrapped tool.
type boundedTracedTool struct {
	*tracedTool
	bound tools.Bounded
}

func (w *boundedTracedTool) CallTimeout() time.Duration { return w.bound.CallTimeout() }

// Tools wraps every tool of ts with Tool.
func (t *Telemetry) Tools(ts []tools.Tool) []tools.Tool {
	if t == nil {
		return ts
	}
	out := make([]tools.Tool, len(ts))
	for i, tool := range ts {
		out[i] = t.Tool(tool)
	}
	return out
}

type tracedTool struct {
	tools.Tool
	t    *Telemetry
	name string
}

// Unwrap returns the traced tool (tools.Wrapper), so that what its calls
// may do (tools.EffectOf) is asked of it.
func (w *tracedTool) Unwrap() tools.Tool { return w.Tool }

func (w *tracedTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	ctx, span := w.t.tracer.Start(ctx, w.name, trace.WithAttributes(
		AttrGenAIOperation.String("execute_tool"), AttrToolName.String(w.Tool.Name())))
	defer span.End()
	if w.t.opts.RecordContent {
		span.SetAttributes(AttrToolArguments.String(string(args)))
	}
	res, err := w.Tool.Run(ctx, args)
	if res.Error != "" {
		span.SetAttributes(AttrToolFailed.Bool(true))
	}
	if in := w.t.metrics; in != nil {
		name := AttrToolName.String(w.Tool.Name())
		in.tools.Add(ctx, 1, metric.WithAttributes(name, AttrToolFailed.Bool(res.Error != "" || err != nil)))
		if err != nil {
			in.failed(ctx, OpTool, err, name)
		}
	}
	if w.t.opts.RecordContent {
		span.SetAttributes(AttrToolResult.String(jsonString(res)))
	}
	if err != nil {
		fail(span, err)
	}
	return res, err
}
