// Package fakeproviders holds the wire-protocol parts of the fake
// providers a research run talks to in tests and scripts: the standalone
// fake of scripts/fakeapi and the end-to-end tests' fakes of cmd/research.
// It reads an OpenAI chat completions request (the prompt, the JSON schema
// asked for, tool results), reads the research graph's prompts (source
// labels to cite, citation markers to copy), and writes the answers: a chat
// completion, unary or streamed as SSE, an OpenAI error, and a SearXNG JSON
// search. For Anthropic's Messages API it reads a request, writes a message
// (JSON or its event stream) and models the prompt cache (AnthropicCache).
// What a fake answers — its script — stays with the fake.
//
// It imports only the standard library and knows no test framework.
package fakeproviders

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
)

// WriteJSON answers with status and v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ---------------------------------------------------------------- OpenAI

// ChatRequest is the part of an OpenAI chat completions body the fakes read.
type ChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// MessageText returns a message's text: a string, or an array of text
// parts.
func MessageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Prompt is the text of all the request's messages, each followed by a
// newline.
func (c ChatRequest) Prompt() string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(MessageText(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}

// Schema is the name of the JSON schema the request asks the reply to
// follow, or "".
func (c ChatRequest) Schema() string {
	if c.ResponseFormat == nil || c.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return c.ResponseFormat.JSONSchema.Name
}

// ToolResults are the texts of the request's tool messages, in order.
func (c ChatRequest) ToolResults() []string {
	var out []string
	for _, m := range c.Messages {
		if m.Role == "tool" {
			out = append(out, MessageText(m.Content))
		}
	}
	return out
}

// WriteOpenAIError answers with status and an OpenAI error of type
// invalid_request_error.
func WriteOpenAIError(w http.ResponseWriter, status int, message string) {
	WriteJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error"}})
}

// Completion is a chat completion to answer with.
type Completion struct {
	ID        string // "chatcmpl-…", of the completion and of each chunk
	Created   int64  // Unix seconds, on a unary completion; 0 leaves it out
	Model     string
	Content   string
	ToolCalls []ToolCall
	// Stream answers as SSE: a chunk with the role, the content in two
	// chunks, each tool call in two (its name, then its arguments), the
	// finish, the usage, then "data: [DONE]".
	Stream bool
}

// ToolCall is a function call of a completion.
type ToolCall struct{ ID, Name, Args string }

// WriteCompletion answers with c, with the finish reason "tool_calls" if it
// calls tools and "stop" if not, and a fixed usage of 100 prompt and 30
// completion tokens. Headers set before it are kept.
func WriteCompletion(w http.ResponseWriter, c Completion) {
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}
	finish := "stop"
	if len(c.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	if !c.Stream {
		msg := map[string]any{"role": "assistant", "content": c.Content}
		if len(c.ToolCalls) > 0 {
			var calls []any
			for _, tc := range c.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": tc.Args}})
			}
			msg["tool_calls"] = calls
		}
		body := map[string]any{"id": c.ID, "object": "chat.completion", "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage}
		if c.Created != 0 {
			body["created"] = c.Created
		}
		WriteJSON(w, http.StatusOK, body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": c.ID, "object": "chat.completion.chunk", "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if c.Content != "" {
		first, second := SplitHalf(c.Content)
		send(chunk(map[string]any{"content": first}, nil))
		send(chunk(map[string]any{"content": second}, nil))
	}
	for i, tc := range c.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": tc.Args}}}}, nil))
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "model": c.Model, "choices": []any{}, "usage": usage})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// SplitHalf splits s in two halves on a rune boundary, for a text streamed
// in two chunks.
func SplitHalf(s string) (string, string) {
	half := len(s) / 2
	for half > 0 && half < len(s) && (s[half]&0xC0) == 0x80 {
		half--
	}
	return s[:half], s[half:]
}

// --------------------------------------------------- research graph prompts

// SufficientReflection is a reflection (schema Reflection) that ends the
// research.
const SufficientReflection = `{"is_sufficient": true, "knowledge_gap": "", "follow_up_queries": []}`

var (
	// sourceLabelRe finds the source labels of a summarising prompt.
	sourceLabelRe = regexp.MustCompile(`<source label="(S\d+)"`)
	// markerRe finds the citation markers a final answer must copy.
	markerRe = regexp.MustCompile(`\[[^\]\n]+\]\(https://vertexaisearch\.cloud\.google\.com/id/[^)\s]+\)`)
)

// CiteSources writes a summary of a summarising prompt that cites each of
// its source labels: one sentence per label from format, given the
// sentence's number and the label ("Fact %d from the sources [%s]."),
// separated by spaces; "" if the prompt has no source.
func CiteSources(prompt, format string) string {
	var sentences []string
	for i, l := range sourceLabelRe.FindAllStringSubmatch(prompt, -1) {
		sentences = append(sentences, fmt.Sprintf(format, i+1, l[1]))
	}
	return strings.Join(sentences, " ")
}

// CitationMarkers are the citation markers of the summaries of a final
// answer's prompt: those after its last "Summaries:", not those of the
// prompt's own example above.
func CitationMarkers(prompt string) []string {
	summaries := prompt
	if i := strings.LastIndex(prompt, "Summaries:"); i >= 0 {
		summaries = prompt[i:]
	}
	return markerRe.FindAllString(summaries, -1)
}

// --------------------------------------------------------------- SearXNG

// SearXNGResult is result number i (from 1) of a search for q, at url, as
// SearXNG's JSON has it.
func SearXNGResult(url, q, snippet string, i int) map[string]any {
	return map[string]any{
		"url": url, "title": fmt.Sprintf("Page %d about %s", i, q), "content": snippet,
		"engine": "duckduckgo", "engines": []string{"duckduckgo", "brave"}, "score": 3.0 - float64(i)/2,
		"category": "general", "positions": []int{i},
	}
}

// WriteSearXNG answers a SearXNG JSON search for q with the results of its
// first page.
func WriteSearXNG(w http.ResponseWriter, q string, results []any) {
	WriteJSON(w, http.StatusOK, map[string]any{"query": q, "number_of_results": len(results), "results": results,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []any{}, "unresponsive_engines": []any{}})
}

// WriteSearXNGLaterPage answers a search for a page after the first: no
// results.
func WriteSearXNGLaterPage(w http.ResponseWriter, q string) {
	WriteJSON(w, http.StatusOK, map[string]any{"query": q, "number_of_results": 0, "results": []any{}})
}

// WriteSearXNGNoJSON answers as SearXNG does a search in a format it does
// not serve, JSON before it is enabled.
func WriteSearXNGNoJSON(w http.ResponseWriter) {
	http.Error(w, "Forbidden: the json format is not enabled", http.StatusForbidden)
}

// MaxOpenAITools is how many tools OpenAI accepts in one request.
const MaxOpenAITools = 128

// CheckRequestRules applies OpenAI's request rules that an agent can break
// and that OpenAI answers with 400: every assistant message with
// tool_calls is followed by one tool message per call (in any order,
// before the next non-tool message), every tool message answers a call of
// the assistant message before it, and a request offers at most
// MaxOpenAITools tools. It returns OpenAI's message for the first rule
// broken, or "".
func (c ChatRequest) CheckRequestRules() string {
	if n := len(c.Tools); n > MaxOpenAITools {
		return fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxOpenAITools, n)
	}
	open := map[string]bool{}
	for i, m := range c.Messages {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[%d], tool_call_id %q)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(sortedKeys(open), ", ")
		}
		for _, tc := range m.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(sortedKeys(open), ", ")
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
