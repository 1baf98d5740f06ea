package openai

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
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// response builds the neutral reply from langchaingo's and the transport's
// views of it.
func (m *Model) response(c *call, r *llms.ContentResponse) (*llm.Response, error) {
	if r == nil || len(r.Choices) == 0 || r.Choices[0] == nil {
		return nil, &llm.APIError{Provider: m.provider, Message: "the reply has no choices", Err: errMalformed}
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
			calls = append(calls, schemas.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: toolCallArguments(tc.FunctionCall.Arguments)})
		}
	}
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = newCallID()
		}
		if calls[i].Name == "" {
			return nil, &llm.APIError{Provider: m.provider, Message: fmt.Sprintf("tool call %d in the reply has no function name", i), Err: errMalformed}
		}
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
		PromptTokens:     intKey(info, "PromptTokens"),
		CompletionTokens: intKey(info, "CompletionTokens"),
		TotalTokens:      intKey(info, "TotalTokens"),
		CachedTokens:     intKey(info, "PromptCachedTokens"),
		ReasoningTokens:  intKey(info, "ReasoningTokens"),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
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
	return "call_" + hex.EncodeToString(b[:])
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
		e := &llm.APIError{Provider: m.provider, Message: m.clean(c.replyErr.Error()), Err: c.replyErr}
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
	case errors.Is(err, lcopenai.ErrEmptyResponse):
		return &llm.APIError{Provider: m.provider, Message: "the reply has no choices", Err: errMalformed}
	default:
		return &llm.APIError{Provider: m.provider, Message: "malformed reply: " + m.clean(err.Error()), Err: errMalformed}
	}
}

// clean makes server or library text safe to show: the key and anything
// shaped like an API key are masked, control characters removed, and the
// length bounded.
func (m *Model) clean(s string) string { return cleanText(s, m.apiKey) }

var keyPattern = regexp.MustCompile(`(sk-(?:proj-|ant-)?)[A-Za-z0-9_\-*]{6,}`)

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
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// errorMessage finds the human-readable message in an error body:
// {"error": {"message"}} (OpenAI, Ollama, llama.cpp), {"error": "…"},
// {"message"} (vLLM), {"detail"}; else the text itself unless it is HTML.
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
