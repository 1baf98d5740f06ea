package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// complete sends a call without streaming and reads the reply.
func (m *Model) complete(ctx context.Context, p prepared) (*llm.Response, error) {
	// The SDK refuses a non-streamed call with a large max_tokens unless it
	// is told how long the call may take: as long as ctx allows (llm.Call's
	// per-call timeout).
	limit := 24 * time.Hour
	if dl, ok := ctx.Deadline(); ok {
		limit = max(time.Until(dl), time.Millisecond)
	}
	msg, err := m.client.Messages.New(ctx, p.params, option.WithRequestTimeout(limit))
	if err != nil {
		return nil, err
	}
	if msg.Type != "message" {
		if e := sdkwire.ParseError(json.RawMessage(msg.JSON.ExtraFields["error"].Raw()), decodeError); e != nil {
			return nil, e
		}
		return nil, &sdkwire.ReplyError{Msg: "the reply is not a message", Err: sdkwire.ErrMalformed}
	}
	a := assembled{model: msg.Model, stop: string(msg.StopReason), usage: usageOf(msg.Usage.InputTokens, msg.Usage.OutputTokens,
		msg.Usage.CacheCreationInputTokens, msg.Usage.CacheReadInputTokens)}
	var text, reasoning strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
		case "tool_use":
			a.calls = append(a.calls, rawCall{id: b.ID, name: b.Name, args: string(b.Input)})
		}
	}
	a.text, a.reasoning = text.String(), reasoning.String()
	return p.build(a), nil
}

// assembled is a reply in the package's terms, streamed or not.
type assembled struct {
	model, text, reasoning string
	calls                  []rawCall
	stop                   string
	usage                  llm.Usage
}

type rawCall struct{ id, name, args string }

// build turns an assembled reply into the neutral one: the structured-output
// tool's input becomes the content, other tool calls get their tool's name
// back (from its wire name), IDs and safe arguments.
func (p prepared) build(a assembled) *llm.Response {
	out := &llm.Response{Content: a.text, Reasoning: a.reasoning, Model: a.model, Usage: a.usage}
	structured := false
	for _, rc := range a.calls {
		if p.schemaTool != "" && rc.name == p.schemaTool && !structured {
			structured = true
			out.Content = rc.args
			if p.schemaWrapped {
				var v struct {
					Value json.RawMessage `json:"value"`
				}
				if json.Unmarshal([]byte(rc.args), &v) == nil && len(v.Value) > 0 {
					out.Content = string(v.Value)
				}
			}
			continue
		}
		id := rc.id
		if id == "" {
			id = sdkwire.CallID("toolu_")
		}
		out.ToolCalls = append(out.ToolCalls, schemas.ToolCall{ID: id, Name: p.names.Name(rc.name), Arguments: sdkwire.ToolCallArguments(rc.args)})
	}
	out.FinishReason = finishReason(a.stop, len(out.ToolCalls) > 0)
	return out
}

// finishReason normalises Anthropic's stop_reason. A tool_use stop caused only
// by the structured-output tool is a normal stop.
func finishReason(s string, toolCalls bool) llm.FinishReason {
	switch s {
	case "end_turn", "stop_sequence", "":
		if toolCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case "tool_use":
		if toolCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "refusal":
		return llm.FinishContentFilter
	}
	return llm.FinishOther
}

// usageOf converts Anthropic's counters. Its input_tokens excludes cache
// reads and writes; PromptTokens counts all three, like OpenAI's
// prompt_tokens, CachedTokens the cache reads (cache_read_input_tokens) and
// CacheWriteTokens the cache writes (cache_creation_input_tokens).
func usageOf(input, output, cacheCreated, cacheRead int64) llm.Usage {
	u := llm.Usage{
		PromptTokens:     int(input + cacheCreated + cacheRead),
		CompletionTokens: int(output),
		CachedTokens:     int(cacheRead),
		CacheWriteTokens: int(cacheCreated),
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// errorTypeStatus is the HTTP status Anthropic uses for an error type, so
// that an error event inside a 200 stream matches the same llm sentinels; 0
// for an unknown type.
func errorTypeStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "api_error":
		return http.StatusInternalServerError
	case "overloaded_error":
		return 529
	}
	return 0
}

// decodeError reads Anthropic's {"type", "message"} error object: the
// message is "type: message", and the type gives the status.
func decodeError(raw json.RawMessage) (msg string, status int, ok bool) {
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", 0, false
	}
	msg = o.Message
	if o.Type != "" {
		if msg == "" {
			msg = o.Type
		} else {
			msg = o.Type + ": " + msg
		}
	}
	return msg, errorTypeStatus(o.Type), true
}
