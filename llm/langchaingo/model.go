package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// Model is an llm.Model backed by a langchaingo llms.Model. It is as safe
// for concurrent use as the model it adapts.
type Model struct {
	lc   llms.Model
	name string
}

var _ llm.Model = (*Model)(nil)

// New adapts lc. name says which backend it is in errors ("bedrock",
// "mistral", …); "" means "langchaingo".
func New(lc llms.Model, name string) *Model {
	if name == "" {
		name = "langchaingo"
	}
	return &Model{lc: lc, name: name}
}

// Generate sends the conversation through the langchaingo model.
func (m *Model) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	if m.lc == nil {
		return nil, llm.ErrNoModel
	}
	req := llm.NewRequest(opts...)
	if req.GoogleSearch {
		return nil, fmt.Errorf("%s: Google Search grounding: %w (use the gemini provider)", m.name, llm.ErrUnsupported)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%s: %w: no messages to send", m.name, llm.ErrBadRequest)
	}
	var instructions string
	var callOpts []llms.CallOption
	if req.Schema != nil {
		instructions = llm.SchemaInstructions(req.SchemaName, req.Schema)
		callOpts = append(callOpts, llms.WithJSONMode())
	}
	content, err := toMessages(msgs, instructions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", m.name, llm.ErrBadRequest, err)
	}
	if req.Temperature != nil {
		callOpts = append(callOpts, llms.WithTemperature(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		callOpts = append(callOpts, llms.WithMaxTokens(req.MaxTokens))
	}
	if len(req.Stop) > 0 {
		callOpts = append(callOpts, llms.WithStopWords(req.Stop))
	}
	names := map[string]bool{}
	if len(req.Tools) > 0 {
		tools := make([]llms.Tool, 0, len(req.Tools))
		for _, d := range req.Tools {
			if d.Name == "" || names[d.Name] {
				return nil, fmt.Errorf("%s: %w: tool names must be present and unique (%q)", m.name, llm.ErrBadRequest, d.Name)
			}
			names[d.Name] = true
			var params any = map[string]any{"type": "object", "properties": map[string]any{}}
			if d.Parameters != nil {
				params = d.Parameters
			}
			tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: d.Name, Description: d.Description, Parameters: params}})
		}
		callOpts = append(callOpts, llms.WithTools(tools))
	}
	switch c := req.ToolChoice; c {
	case "":
	case llm.ToolAuto, llm.ToolNone, llm.ToolRequired:
		if len(names) == 0 && c == llm.ToolRequired {
			return nil, fmt.Errorf("%s: %w: tool choice %q needs tools", m.name, llm.ErrBadRequest, c)
		}
		if len(names) > 0 {
			callOpts = append(callOpts, llms.WithToolChoice(string(c)))
		}
	default:
		if !names[string(c)] {
			return nil, fmt.Errorf("%s: %w: tool choice names %q, which is not among the offered tools", m.name, llm.ErrBadRequest, c)
		}
		callOpts = append(callOpts, llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: string(c)}}))
	}
	if f := req.OnDelta; f != nil {
		callOpts = append(callOpts,
			llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
				if len(chunk) > 0 {
					f(llm.Delta{Content: string(chunk)})
				}
				return nil
			}),
			// Backends call this beside StreamingFunc, with the content
			// again: only the thinking is taken from it.
			llms.WithStreamingReasoningFunc(func(_ context.Context, reasoning, _ []byte) error {
				if len(reasoning) > 0 {
					f(llm.Delta{Reasoning: string(reasoning)})
				}
				return nil
			}))
	}
	resp, err := m.lc.GenerateContent(ctx, content, callOpts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	return m.response(resp)
}

// response converts the first choice of a langchaingo reply.
func (m *Model) response(r *llms.ContentResponse) (*llm.Response, error) {
	if r == nil || len(r.Choices) == 0 || r.Choices[0] == nil {
		return nil, fmt.Errorf("%s: the reply has no choices", m.name)
	}
	ch := r.Choices[0]
	out := &llm.Response{Content: ch.Content, Reasoning: ch.ReasoningContent, Usage: usage(ch.GenerationInfo)}
	for i, tc := range ch.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		out.ToolCalls = append(out.ToolCalls, schemas.ToolCall{ID: id, Name: tc.FunctionCall.Name, Arguments: arguments(tc.FunctionCall.Arguments)})
	}
	out.FinishReason = finishReason(ch.StopReason, len(out.ToolCalls) > 0)
	return out, nil
}

// toMessages converts the conversation; instructions (the schema prompt)
// join the first system message, or lead as one.
func toMessages(msgs []schemas.Message, instructions string) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(msgs)+1)
	if instructions != "" {
		if msgs[0].Role == schemas.System {
			first := msgs[0]
			first.Content = strings.TrimRight(first.Content, "\n") + "\n\n" + instructions
			msgs = append([]schemas.Message{first}, msgs[1:]...)
		} else {
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, instructions))
		}
	}
	for i, msg := range msgs {
		switch msg.Role {
		case schemas.System:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, msg.Content))
		case schemas.User:
			parts := []llms.ContentPart{llms.TextPart(msg.Content)}
			for _, img := range msg.Images {
				parts = append(parts, llms.BinaryPart(img.MIMEType, img.Data))
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
		case schemas.Assistant:
			var parts []llms.ContentPart
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				parts = append(parts, llms.TextPart(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: a tool call needs an ID and a name", i)
				}
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				parts = append(parts, llms.ToolCall{ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: args}})
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
		case schemas.Tool:
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool result needs the ToolCallID of the call it answers", i)
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Name: msg.Name, Content: msg.Content},
			}})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

// arguments keeps a model's arguments text as JSON: valid JSON as it is,
// empty as {}, anything else as a JSON string holding the text.
func arguments(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// usage reads the counters backends put in GenerationInfo, whichever names
// and numeric types they use.
func usage(info map[string]any) llm.Usage {
	get := func(keys ...string) int {
		for _, k := range keys {
			switch v := info[k].(type) {
			case int:
				return v
			case int32:
				return int(v)
			case int64:
				return int(v)
			case float64:
				return int(v)
			}
		}
		return 0
	}
	u := llm.Usage{
		PromptTokens:     get("PromptTokens", "InputTokens"),
		CompletionTokens: get("CompletionTokens", "OutputTokens"),
		TotalTokens:      get("TotalTokens"),
		CachedTokens:     get("PromptCachedTokens", "CacheReadInputTokens"),
		ReasoningTokens:  get("ReasoningTokens"),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

// finishReason normalises the backends' stop reasons.
func finishReason(s string, toolCalls bool) llm.FinishReason {
	switch strings.ToLower(s) {
	case "tool_calls", "tool_use", "function_call":
		return llm.FinishToolCalls
	case "length", "max_tokens":
		return llm.FinishLength
	case "content_filter", "safety", "refusal":
		return llm.FinishContentFilter
	case "", "stop", "end_turn", "stop_sequence", "eos":
		if toolCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	}
	return llm.FinishOther
}

// errNoInput is a tool call without the input langchaingo tools take.
var errNoInput = errors.New(`the arguments have no "input" string`)
