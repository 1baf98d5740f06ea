package openai

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/lcbridge"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

// streamState is what the transport assembles from a streamed reply.
type streamState struct {
	done      bool // saw data: [DONE]
	finish    string
	content   strings.Builder
	reasoning strings.Builder
	usage     llm.Usage
	calls     []*toolCallBuilder
	byIndex   map[int]*toolCallBuilder
}

type toolCallBuilder struct {
	id, name string
	args     strings.Builder
}

// chunk is one streamed chat.completion.chunk, with the fields langchaingo
// drops: tool-call indexes, "reasoning", the model, an error object.
type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// wireUsage is the usage object of a reply or of the last stream chunk.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u wireUsage) usage() llm.Usage {
	out := llm.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CachedTokens:     u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// streamLine inspects one event-stream line (on the reader's goroutine).
func (c *call) streamLine(line []byte) (bool, error) {
	data, ok := wiretap.SSEData(line)
	if !ok {
		return true, nil
	}
	if string(data) == "[DONE]" {
		c.mu.Lock()
		c.stream.done = true
		c.mu.Unlock()
		return true, nil
	}
	var ch chunk
	if json.Unmarshal(data, &ch) != nil {
		return true, nil // like langchaingo: ignore data that is not JSON
	}
	c.mu.Lock()
	if e := wiretap.StreamError(ch.Error, decodeError); e != nil {
		c.ReplyErr = e
		c.mu.Unlock()
		return false, e
	}
	if ch.Model != "" {
		c.model = ch.Model
	}
	if ch.Usage != nil {
		c.stream.usage = ch.Usage.usage()
	}
	var d llm.Delta
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d.Content += choice.Delta.Content
		r := choice.Delta.ReasoningContent
		if r == "" {
			r = choice.Delta.Reasoning
		}
		d.Reasoning += r
		c.stream.content.WriteString(choice.Delta.Content)
		c.stream.reasoning.WriteString(r)
		for _, tc := range choice.Delta.ToolCalls {
			c.stream.addToolCall(tc)
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			c.stream.finish = *choice.FinishReason
		}
	}
	c.mu.Unlock()
	if c.spec.onDelta != nil && (d.Content != "" || d.Reasoning != "") {
		c.spec.onDelta(d)
	}
	return true, nil
}

// streamEnd decides how the stream ended. A stream is complete when it sent
// [DONE], or a finish_reason (some servers close without [DONE]).
func (c *call) streamEnd(readErr error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case readErr != nil:
		c.ReplyErr = wiretap.StreamEnded(readErr)
	case c.stream.done || c.stream.finish != "":
		return io.EOF
	default:
		c.ReplyErr = wiretap.Broken(msgTruncated, errTruncated)
	}
	return c.ReplyErr
}

// check catches what langchaingo reports as success although the reply is
// not whole: when the context ends mid-stream its reader goroutine may quit
// without passing the read error on, and the partial reply comes back
// without an error.
func (c *call) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ReplyErr != nil {
		return c.ReplyErr
	}
	if c.spec.stream && !c.stream.done && c.stream.finish == "" {
		c.ReplyErr = wiretap.Broken(msgTruncated, errTruncated)
		return c.ReplyErr
	}
	return nil
}

// addToolCall merges a streamed tool-call fragment, by index when the server
// sends one (OpenAI does; fragments of parallel calls may interleave), else
// by ID, else into the latest call.
func (s *streamState) addToolCall(tc toolCallDelta) {
	var b *toolCallBuilder
	switch {
	case tc.Index != nil:
		b = s.byIndex[*tc.Index]
		if b == nil {
			b = &toolCallBuilder{}
			s.byIndex[*tc.Index] = b
			s.calls = append(s.calls, b)
		}
	case len(s.calls) > 0 && (tc.ID == "" || tc.ID == s.calls[len(s.calls)-1].id):
		b = s.calls[len(s.calls)-1]
	default:
		b = &toolCallBuilder{}
		s.calls = append(s.calls, b)
	}
	if b.id == "" {
		b.id = tc.ID
	}
	if b.name == "" {
		b.name = tc.Function.Name
	}
	args := tc.Function.Arguments
	var text string
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		if json.Unmarshal(args, &text) == nil {
			b.args.WriteString(text)
		}
	default:
		// Some servers send the arguments as a JSON object, not a string.
		b.args.Write(args)
	}
}

func (s *streamState) toolCalls() []schemas.ToolCall {
	if len(s.calls) == 0 {
		return nil
	}
	out := make([]schemas.ToolCall, 0, len(s.calls))
	for _, b := range s.calls {
		out = append(out, schemas.ToolCall{ID: b.id, Name: b.name, Arguments: lcbridge.ToolCallArguments(b.args.String())})
	}
	return out
}
