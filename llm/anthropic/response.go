package anthropic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// response builds the neutral reply from langchaingo's choices (one per
// content block) and the transport's view of the reply.
func (m *Model) response(c *call, r *llms.ContentResponse) (*llm.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &llm.Response{Model: c.reply.model}
	var text, reasoning strings.Builder
	var stop string
	var info map[string]any
	var calls []schemas.ToolCall
	var structured *string
	for _, ch := range r.Choices {
		if ch == nil {
			continue
		}
		if info == nil {
			info = ch.GenerationInfo
		}
		if ch.StopReason != "" {
			stop = ch.StopReason
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
				args = raw.String() // exact, where langchaingo re-encodes a map
			}
			if c.spec.schemaTool != "" && tc.FunctionCall.Name == c.spec.schemaTool && structured == nil {
				structured = &args
				continue
			}
			id := tc.ID
			if id == "" {
				id = newCallID()
			}
			calls = append(calls, schemas.ToolCall{ID: id, Name: tc.FunctionCall.Name, Arguments: toolCallArguments(args)})
		}
	}
	out.Content = text.String()
	out.Reasoning = reasoning.String()
	out.ToolCalls = calls
	if structured != nil {
		out.Content = *structured
		if c.spec.schemaWrapped {
			var v struct {
				Value json.RawMessage `json:"value"`
			}
			if json.Unmarshal([]byte(*structured), &v) == nil && len(v.Value) > 0 {
				out.Content = string(v.Value)
			}
		}
	}
	out.FinishReason = finishReason(stop, len(calls) > 0)
	out.Usage = usage(info)
	return out, nil
}

// emptyResponse is the reply for a complete message without content blocks.
func (m *Model) emptyResponse(c *call) (*llm.Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reply.complete || c.replyErr != nil || c.status != http.StatusOK {
		return nil, false
	}
	u := c.reply.usage
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return &llm.Response{
		Model:        c.reply.model,
		FinishReason: finishReason(c.reply.stopReason, false),
		Usage: usage(map[string]any{
			"InputTokens":              deref(u.InputTokens),
			"OutputTokens":             deref(u.OutputTokens),
			"CacheCreationInputTokens": deref(u.CacheCreationInputTokens),
			"CacheReadInputTokens":     deref(u.CacheReadInputTokens),
		}),
	}, true
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

// usage reads langchaingo's GenerationInfo counters. Anthropic's input_tokens
// excludes cache reads and writes; PromptTokens counts all three, like
// OpenAI's prompt_tokens, and CachedTokens the cache reads.
func usage(info map[string]any) llm.Usage {
	in := intKey(info, "InputTokens")
	created := intKey(info, "CacheCreationInputTokens")
	read := intKey(info, "CacheReadInputTokens")
	u := llm.Usage{
		PromptTokens:     in + created + read,
		CompletionTokens: intKey(info, "OutputTokens"),
		CachedTokens:     read,
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func intKey(info map[string]any, key string) int {
	switch v := info[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "toolu_" + hex.EncodeToString(b[:])
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
	switch {
	case c.transportErr != nil:
		return &llm.APIError{Provider: m.provider, Message: "cannot reach the server: " + m.clean(c.transportErr.Error()), Err: c.transportErr}
	case c.status != 0 && c.status != http.StatusOK:
		msg := m.clean(errorMessage(c.errBody))
		if msg == "" {
			msg = "no details in the reply"
		}
		if m.keyless && (c.status == http.StatusUnauthorized || c.status == http.StatusForbidden) {
			msg += fmt.Sprintf(" (no API key was sent: set the API key in the config, or %s)", EnvAPIKey)
		}
		return &llm.APIError{Provider: m.provider, Status: c.status, Message: msg, KeyEnv: m.keyEnv, RetryAfter: c.retryAfter}
	case c.replyErr != nil:
		e := &llm.APIError{Provider: m.provider, Message: m.clean(c.replyErr.Error()), Err: c.replyErr, KeyEnv: m.keyEnv}
		var re *replyError
		if errors.As(c.replyErr, &re) {
			e.Status = re.status
			if e.Message == "" {
				e.Message = "the server reported an error without a message"
			}
		}
		return e
	case !c.sent:
		return fmt.Errorf("%s: building the request: %w", m.provider, err)
	default:
		return &llm.APIError{Provider: m.provider, Message: "malformed reply: " + m.clean(err.Error()), Err: errMalformed}
	}
}

// clean makes server or library text safe to show: the key and anything
// shaped like an API key are masked, control characters removed, and the
// length bounded.
func (m *Model) clean(s string) string { return cleanText(s, m.apiKey) }

var keyPattern = regexp.MustCompile(`(sk-(?:ant-|proj-)?)[A-Za-z0-9_\-*]{6,}`)

func cleanText(s, key string) string {
	if len(key) >= 6 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = keyPattern.ReplaceAllString(s, "$1[redacted]")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	const limit = 800
	if len(s) > limit {
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// errorMessage finds the human-readable message in an error body:
// {"type":"error","error":{"type","message"}} (Anthropic), {"error":"…"},
// {"message"}, {"detail"}; else the text itself unless it is HTML.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if e := errorObject(v.Error); e != nil && e.msg != "" {
			return e.msg
		}
		if v.Message != "" {
			return v.Message
		}
		var d string
		if json.Unmarshal(v.Detail, &d) == nil && d != "" {
			return d
		}
		if len(v.Detail) > 0 && string(v.Detail) != "null" {
			return string(v.Detail)
		}
	}
	text := strings.TrimSpace(string(body))
	if strings.HasPrefix(text, "<") {
		return ""
	}
	return text
}
