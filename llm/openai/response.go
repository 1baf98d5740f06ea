package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// complete sends a call without streaming and reads the reply.
func (m *Model) complete(ctx context.Context, p prepared) (*llm.Response, error) {
	r, err := m.client.Chat.Completions.New(ctx, p.params)
	if err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 {
		// A compatible server may answer a 200 with an error object.
		if e := sdkwire.ParseError(json.RawMessage(r.JSON.ExtraFields["error"].Raw()), decodeError); e != nil {
			return nil, e
		}
		return nil, &sdkwire.ReplyError{Msg: "the reply has no choices", Err: sdkwire.ErrMalformed}
	}
	msg := r.Choices[0].Message
	out := &llm.Response{
		Content:   msg.Content,
		Reasoning: reasoning(msg.JSON.ExtraFields),
		Model:     r.Model,
		Usage:     usage(r.Usage),
	}
	var calls []schemas.ToolCall
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		calls = append(calls, schemas.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments, tc.Function.JSON.Arguments)})
	}
	if err := nameCalls(calls, p.names); err != nil {
		return nil, err
	}
	out.ToolCalls = calls
	out.FinishReason = finishReason(r.Choices[0].FinishReason, len(calls) > 0)
	return out, nil
}

// nameCalls gives calls without an ID one, and each call its tool's name
// (from its wire name).
func nameCalls(calls []schemas.ToolCall, names llm.ToolNames) error {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = sdkwire.CallID("call_")
		}
		if calls[i].Name == "" {
			return &sdkwire.ReplyError{Msg: fmt.Sprintf("tool call %d in the reply has no function name", i), Err: sdkwire.ErrMalformed}
		}
		calls[i].Name = names.Name(calls[i].Name)
	}
	return nil
}

// arguments is a tool call's arguments as the reply has them: the string
// the API sends, or the JSON object some servers send instead.
func arguments(text string, field respjson.Field) json.RawMessage {
	if raw := field.Raw(); text == "" && len(raw) > 0 && raw[0] == '{' {
		return sdkwire.ToolCallArguments(raw)
	}
	return sdkwire.ToolCallArguments(text)
}

// reasoning reads the thinking text compatible servers add to a message or
// delta: reasoning_content (DeepSeek, vLLM) or reasoning (Ollama,
// OpenRouter). The OpenAI API has neither.
func reasoning(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		var s string
		if f, ok := extra[key]; ok && json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
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

// usage converts the usage object: prompt_tokens counts cached input too,
// prompt_tokens_details.cached_tokens is what was read from the prompt
// cache and cache_write_tokens what was written to it.
func usage(u openai.CompletionUsage) llm.Usage {
	out := llm.Usage{
		PromptTokens:     int(u.PromptTokens),
		CompletionTokens: int(u.CompletionTokens),
		TotalTokens:      int(u.TotalTokens),
		CachedTokens:     int(u.PromptTokensDetails.CachedTokens),
		CacheWriteTokens: int(u.PromptTokensDetails.CacheWriteTokens),
		ReasoningTokens:  int(u.CompletionTokensDetails.ReasoningTokens),
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

// decodeError reads an "error" object as OpenAI and compatible servers send
// it: {"message", "type", "code"}; the message falls back to the type, and
// a code in the HTTP error range is the status.
func decodeError(raw json.RawMessage) (msg string, status int, ok bool) {
	var o struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", 0, false
	}
	msg = o.Message
	if msg == "" {
		msg = o.Type
	}
	var code int
	if json.Unmarshal(o.Code, &code) == nil && code >= 400 && code <= 599 {
		status = code
	}
	return msg, status, true
}
