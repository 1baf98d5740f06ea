package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/lcbridge"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

// response builds the neutral reply from langchaingo's and the transport's
// views of it.
func (m *Model) response(c *call, r *llms.ContentResponse) (*llm.Response, error) {
	if r == nil || len(r.Choices) == 0 || r.Choices[0] == nil {
		return nil, &llm.APIError{Provider: m.provider, Message: "the reply has no choices", Err: wiretap.ErrMalformed}
	}
	ch := r.Choices[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &llm.Response{
		Content:   ch.Content,
		Reasoning: ch.ReasoningContent,
		Model:     c.model,
		Usage:     usage(ch.GenerationInfo),
	}
	finish := ch.StopReason
	var calls []schemas.ToolCall
	if c.spec.stream {
		// Streams are assembled by the transport: langchaingo's streamed
		// tool calls ignore the index, its finish reason is the last
		// chunk's (which may be empty), and its scanner never sees lines
		// over maxPassLine.
		out.Content = c.stream.content.String()
		out.Usage = c.stream.usage
		out.Reasoning = c.stream.reasoning.String()
		finish = c.stream.finish
		calls = c.stream.toolCalls()
	} else {
		if out.Reasoning == "" {
			out.Reasoning = c.reasoning
		}
		for _, tc := range ch.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			calls = append(calls, schemas.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: lcbridge.ToolCallArguments(tc.FunctionCall.Arguments)})
		}
	}
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = lcbridge.CallID("call_")
		}
		if calls[i].Name == "" {
			return nil, &llm.APIError{Provider: m.provider, Message: fmt.Sprintf("tool call %d in the reply has no function name", i), Err: wiretap.ErrMalformed}
		}
		calls[i].Name = c.spec.names.Name(calls[i].Name)
	}
	out.ToolCalls = calls
	out.FinishReason = finishReason(finish, len(calls) > 0)
	return out, nil
}

// finishReason normalises OpenAI's finish_reason. Servers that report "stop"
// for a reply with tool calls (older Ollama) get tool_calls.
func finishReason(s string, toolCalls bool) llm.FinishReason {
	switch s {
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	case "length":
		return llm.FinishLength
	case "content_filter":
		return llm.FinishContentFilter
	case "stop", "", "null", "eos", "end_turn":
		if toolCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	}
	return llm.FinishOther
}

// usage reads langchaingo's GenerationInfo counters.
func usage(info map[string]any) llm.Usage {
	u := llm.Usage{
		PromptTokens:     lcbridge.IntKey(info, "PromptTokens"),
		CompletionTokens: lcbridge.IntKey(info, "CompletionTokens"),
		TotalTokens:      lcbridge.IntKey(info, "TotalTokens"),
		CachedTokens:     lcbridge.IntKey(info, "PromptCachedTokens"),
		ReasoningTokens:  lcbridge.IntKey(info, "ReasoningTokens"),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

// fail turns a failed call into the error Generate returns: the caller's
// context error, or an *llm.APIError built from what the transport saw
// (langchaingo reduces statuses to strings and hides network errors).
func (m *Model) fail(ctx context.Context, c *call, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.Failure(err, m.source()); e != nil {
		return e
	}
	if errors.Is(err, lcopenai.ErrEmptyResponse) {
		return &llm.APIError{Provider: m.provider, Message: "the reply has no choices", Err: wiretap.ErrMalformed}
	}
	return &llm.APIError{Provider: m.provider, Message: "malformed reply: " + wiretap.Clean(err.Error(), m.apiKey), Err: wiretap.ErrMalformed}
}

// source names the model and its key in errors.
func (m *Model) source() wiretap.Source {
	return wiretap.Source{Provider: m.provider, APIKey: m.apiKey, KeyEnv: m.keyEnv, EnvAPIKey: EnvAPIKey, Decode: decodeError}
}
