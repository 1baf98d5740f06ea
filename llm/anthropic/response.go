package anthropic

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/lcbridge"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

// assembled is a reply in the package's terms, from langchaingo's choices
// (non-streamed) or from the transport's view of the stream.
type assembled struct {
	text, reasoning string
	calls           []rawCall
	stop            string
	usage           llm.Usage
}

type rawCall struct{ id, name, args string }

// fromChoices reads langchaingo's choices (one per content block), taking
// each tool call's exact input from the transport (langchaingo re-encodes it
// through a map).
func (c *call) fromChoices(r *llms.ContentResponse) assembled {
	c.mu.Lock()
	defer c.mu.Unlock()
	var a assembled
	var text, reasoning strings.Builder
	var info map[string]any
	for _, ch := range r.Choices {
		if ch == nil {
			continue
		}
		if info == nil {
			info = ch.GenerationInfo
		}
		if ch.StopReason != "" {
			a.stop = ch.StopReason
		}
		if _, thinking := ch.GenerationInfo["ThinkingSignature"]; thinking {
			t, _ := ch.GenerationInfo["ThinkingContent"].(string)
			reasoning.WriteString(t)
			continue
		}
		text.WriteString(ch.Content)
		for _, tc := range ch.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			args := tc.FunctionCall.Arguments
			if raw := c.reply.inputs[tc.ID]; raw != nil && raw.Len() > 0 {
				args = raw.String()
			}
			a.calls = append(a.calls, rawCall{id: tc.ID, name: tc.FunctionCall.Name, args: args})
		}
	}
	a.text, a.reasoning = text.String(), reasoning.String()
	a.usage = usage(lcbridge.IntKey(info, "InputTokens"), lcbridge.IntKey(info, "OutputTokens"),
		lcbridge.IntKey(info, "CacheCreationInputTokens"), lcbridge.IntKey(info, "CacheReadInputTokens"))
	return a
}

// fromStream reads the reply the transport assembled from the event stream
// (or, for a non-streamed reply without content, from the body). Streams are
// assembled here rather than by langchaingo: its line scanner stops at 64
// KiB, so the transport keeps longer lines from it.
func (c *call) fromStream() assembled {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.reply
	var a assembled
	var text, reasoning strings.Builder
	for _, i := range slices.Sorted(maps.Keys(r.blocks)) {
		b := r.blocks[i]
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			reasoning.WriteString(b.text.String())
		case "tool_use":
			var args string
			if buf := r.inputs[b.id]; buf != nil {
				args = buf.String()
			}
			a.calls = append(a.calls, rawCall{id: b.id, name: b.name, args: args})
		}
	}
	a.text, a.reasoning, a.stop = text.String(), reasoning.String(), r.stopReason
	a.usage = r.usage.neutral()
	return a
}

// neutral is the llm.Usage of the counters seen so far.
func (u wireUsage) neutral() llm.Usage {
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return usage(deref(u.InputTokens), deref(u.OutputTokens), deref(u.CacheCreationInputTokens), deref(u.CacheReadInputTokens))
}

// build turns an assembled reply into the neutral one: the structured-output
// tool's input becomes the content, other tool calls get their tool's name
// back (from its wire name), IDs and safe arguments.
func (m *Model) build(c *call, a assembled) *llm.Response {
	c.mu.Lock()
	model := c.reply.model
	c.mu.Unlock()
	out := &llm.Response{Content: a.text, Reasoning: a.reasoning, Model: model, Usage: a.usage}
	structured := false
	for _, rc := range a.calls {
		if c.spec.schemaTool != "" && rc.name == c.spec.schemaTool && !structured {
			structured = true
			out.Content = rc.args
			if c.spec.schemaWrapped {
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
			id = lcbridge.CallID("toolu_")
		}
		out.ToolCalls = append(out.ToolCalls, schemas.ToolCall{ID: id, Name: c.spec.names.Name(rc.name), Arguments: lcbridge.ToolCallArguments(rc.args)})
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

// usage converts Anthropic's counters. Its input_tokens excludes cache reads
// and writes; PromptTokens counts all three, like OpenAI's prompt_tokens, and
// CachedTokens the cache reads.
func usage(input, output, cacheCreated, cacheRead int) llm.Usage {
	u := llm.Usage{
		PromptTokens:     input + cacheCreated + cacheRead,
		CompletionTokens: output,
		CachedTokens:     cacheRead,
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// fail turns a failed call into the error Generate returns: the caller's
// context error, or an *llm.APIError built from what the transport saw
// (langchaingo reduces statuses to strings).
func (m *Model) fail(ctx context.Context, c *call, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.Failure(err, m.source()); e != nil {
		// A stream cut off after message_start has reported tokens.
		if apiErr, ok := e.(*llm.APIError); ok && c.spec.stream {
			apiErr.Usage = c.reply.usage.neutral()
		}
		return e
	}
	return &llm.APIError{Provider: m.provider, Message: "malformed reply: " + wiretap.Clean(err.Error(), m.apiKey), Err: wiretap.ErrMalformed}
}

// source names the model and its key in errors.
func (m *Model) source() wiretap.Source {
	return wiretap.Source{Provider: m.provider, APIKey: m.apiKey, KeyEnv: m.keyEnv, EnvAPIKey: EnvAPIKey, Decode: decodeError}
}
