package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// GenAI semantic-convention attribute keys of model-call spans, and
// deepgraph's own.
const (
	AttrGenAIOperation     = attribute.Key("gen_ai.operation.name")
	AttrGenAISystem        = attribute.Key("gen_ai.system")
	AttrGenAIProvider      = attribute.Key("gen_ai.provider.name")
	AttrGenAIRequestModel  = attribute.Key("gen_ai.request.model")
	AttrGenAIResponseModel = attribute.Key("gen_ai.response.model")
	AttrGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	AttrGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	AttrGenAICachedTokens  = attribute.Key("gen_ai.usage.cached_input_tokens")
	// AttrGenAICacheWriteTokens is the input tokens written to the
	// provider's prompt cache.
	AttrGenAICacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	AttrGenAIFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	AttrGenAITemperature      = attribute.Key("gen_ai.request.temperature")
	AttrGenAIMaxTokens        = attribute.Key("gen_ai.request.max_tokens")
	AttrGenAIInputMessages    = attribute.Key("gen_ai.input.messages")
	AttrGenAIOutputMessages   = attribute.Key("gen_ai.output.messages")
	AttrRole                  = attribute.Key("deepgraph.role")
	AttrHTTPStatus            = attribute.Key("http.response.status_code")
)

// Model wraps m so that each Generate call is a client span named
// "chat MODEL" with the GenAI semantic conventions: the provider and model
// (from spec, "provider:model"), the tokens used, the finish reason, and
// error.type on failure — also the tokens a failed call reported. role
// (llm.RoleQuery, …) is recorded as deepgraph.role. Prompts and answers are
// recorded only with Options.RecordContent. A nil Telemetry returns m.
func (t *Telemetry) Model(m llm.Model, spec, role string) llm.Model {
	if t == nil || m == nil {
		return m
	}
	provider, model, err := llm.ParseSpec(spec)
	if err != nil {
		provider, model = "", spec
	}
	tm := &tracedModel{inner: m, t: t, provider: provider, model: model, role: role,
		name: "chat " + model}
	if t.metrics != nil {
		tm.metricAttrs = []attribute.KeyValue{AttrGenAIOperation.String("chat"), AttrGenAIRequestModel.String(model)}
		if provider != "" {
			tm.metricAttrs = append(tm.metricAttrs, AttrGenAIProvider.String(provider))
		}
		if role != "" {
			tm.metricAttrs = append(tm.metricAttrs, AttrRole.String(role))
		}
		tm.metricAttrs = slices.Clip(tm.metricAttrs)
		tm.metricSet = attribute.NewSet(slices.Clone(tm.metricAttrs)...)
	}
	return tm
}

type tracedModel struct {
	inner                       llm.Model
	t                           *Telemetry
	provider, model, role, name string
	metricAttrs                 []attribute.KeyValue // of every metric point; capacity clipped, never sorted
	metricSet                   attribute.Set        // metricAttrs as a set
}

// Name is the inner model's name (research chooses a context budget by
// it), or the spec's model.
func (m *tracedModel) Name() string {
	if n, ok := m.inner.(interface{ Name() string }); ok {
		return n.Name()
	}
	return m.model
}

// Unwrap returns the wrapped model.
func (m *tracedModel) Unwrap() llm.Model { return m.inner }

func (m *tracedModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, AttrGenAIOperation.String("chat"), AttrGenAIRequestModel.String(m.model))
	if m.provider != "" {
		attrs = append(attrs, AttrGenAISystem.String(m.provider), AttrGenAIProvider.String(m.provider))
	}
	if m.role != "" {
		attrs = append(attrs, AttrRole.String(m.role))
	}
	req := llm.NewRequest(opts...)
	if req.Temperature != nil {
		attrs = append(attrs, AttrGenAITemperature.Float64(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, AttrGenAIMaxTokens.Int(req.MaxTokens))
	}
	ctx, span := m.t.tracer.Start(ctx, m.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	if m.t.opts.RecordContent && span.IsRecording() {
		span.SetAttributes(AttrGenAIInputMessages.String(jsonString(msgs)))
	}
	start := time.Now()
	resp, err := m.inner.Generate(ctx, msgs, opts...)
	if err != nil {
		var u llm.Usage
		if apiErr, ok := errors.AsType[*llm.APIError](err); ok {
			if apiErr.Status != 0 {
				span.SetAttributes(AttrHTTPStatus.Int(apiErr.Status))
			}
			usage(span, apiErr.Usage)
			u = apiErr.Usage
		}
		fail(span, err)
		if m.t.metrics != nil {
			m.t.metrics.modelCall(ctx, m.metricAttrs, m.metricSet, start, u, err)
		}
		return resp, err
	}
	if m.t.metrics != nil {
		var u llm.Usage
		if resp != nil {
			u = resp.Usage
		}
		m.t.metrics.modelCall(ctx, m.metricAttrs, m.metricSet, start, u, nil)
	}
	if resp == nil {
		return resp, err
	}
	usage(span, resp.Usage)
	if resp.Model != "" {
		span.SetAttributes(AttrGenAIResponseModel.String(resp.Model))
	}
	if resp.FinishReason != "" {
		span.SetAttributes(AttrGenAIFinishReasons.StringSlice([]string{string(resp.FinishReason)}))
	}
	if m.t.opts.RecordContent && span.IsRecording() {
		span.SetAttributes(AttrGenAIOutputMessages.String(jsonString([]outputMessage{{
			Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls, FinishReason: string(resp.FinishReason)}})))
	}
	return resp, nil
}

type outputMessage struct {
	Role         string             `json:"role"`
	Content      string             `json:"content,omitempty"`
	ToolCalls    []schemas.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string             `json:"finish_reason,omitempty"`
}

func usage(span trace.Span, u llm.Usage) {
	if u == (llm.Usage{}) {
		return
	}
	span.SetAttributes(AttrGenAIInputTokens.Int(u.PromptTokens), AttrGenAIOutputTokens.Int(u.CompletionTokens))
	if u.CachedTokens > 0 {
		span.SetAttributes(AttrGenAICachedTokens.Int(u.CachedTokens))
	}
	if u.CacheWriteTokens > 0 {
		span.SetAttributes(AttrGenAICacheWriteTokens.Int(u.CacheWriteTokens))
	}
}

func jsonString(v any) string {
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return "(not encodable: " + err.Error() + ")"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
