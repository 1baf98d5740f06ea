package fakeproviders

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// ------------------------------------------------------------- Anthropic

// AnthropicRequest is the part of a Messages API body the fakes read; Body
// is all of it, decoded, for AnthropicCache.
type AnthropicRequest struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Body   map[string]any
}

// ReadAnthropicRequest decodes a Messages API body.
func ReadAnthropicRequest(r *http.Request) (AnthropicRequest, error) {
	var req AnthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req.Body); err != nil {
		return req, err
	}
	raw, _ := json.Marshal(req.Body)
	return req, json.Unmarshal(raw, &req)
}

// Prompt is the text of the request's text blocks, each followed by a
// newline.
func (r AnthropicRequest) Prompt() string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// HasTool says whether the request offers a tool named name (the
// structured-output tool is named after the schema).
func (r AnthropicRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// AnthropicUsage is the usage of a Messages API reply.
type AnthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

// AnthropicCache models Anthropic's prompt cache as it is documented: the
// prompt is a sequence of blocks — the tools, the system prompt's blocks,
// then each turn's content blocks; a block with cache_control is a
// breakpoint; a request reads the longest prefix, ending at a block
// boundary at most 20 blocks before one of its breakpoints, that an
// earlier request wrote, and writes the prefix ending at each breakpoint,
// when it is at least 1,024 tokens. A token is 4 bytes of a block's JSON.
// The zero value is an empty cache; it is safe for concurrent use.
type AnthropicCache struct {
	mu      sync.Mutex
	written map[[32]byte]bool
}

// Use returns the usage of a request with body (output tokens: output):
// what it reads from the cache, what it writes to it, the rest as plain
// input.
func (c *AnthropicCache) Use(body map[string]any, output int) AnthropicUsage {
	texts, marks := cacheBlocks(body)
	prefix := make([]int, len(texts)) // tokens up to and including block i
	hashes := make([][32]byte, len(texts))
	h := sha256.New()
	total := 0
	for i, t := range texts {
		total += len(t) / 4
		prefix[i] = total
		fmt.Fprintf(h, "%d:%s|", len(t), t)
		copy(hashes[i][:], h.Sum(nil))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written == nil {
		c.written = map[[32]byte]bool{}
	}
	read, last := 0, -1
	for b, mark := range marks {
		if !mark {
			continue
		}
		last = b
		for q := b; q >= 0 && q >= b-20; q-- {
			if c.written[hashes[q]] && prefix[q] > read {
				read = prefix[q]
			}
		}
	}
	written := 0
	if last >= 0 && prefix[last] >= 1024 {
		written = max(prefix[last]-read, 0)
	}
	for b, mark := range marks {
		if mark && prefix[b] >= 1024 {
			c.written[hashes[b]] = true
		}
	}
	return AnthropicUsage{InputTokens: total - read - written, OutputTokens: output, CacheReadInputTokens: read, CacheCreationInputTokens: written}
}

// cacheBlocks flattens a request body into its cacheable blocks: each
// block's JSON (with its role) without its cache_control, and whether it
// had one (a breakpoint).
func cacheBlocks(body map[string]any) (texts []string, marks []bool) {
	add := func(role any, b any) {
		mark := false
		if m, ok := b.(map[string]any); ok {
			if _, has := m["cache_control"]; has {
				mark = true
				c := make(map[string]any, len(m))
				for k, v := range m {
					if k != "cache_control" {
						c[k] = v
					}
				}
				b = c
			}
		}
		j, _ := json.Marshal(map[string]any{"role": role, "block": b})
		texts, marks = append(texts, string(j)), append(marks, mark)
	}
	list := func(v any) []any { l, _ := v.([]any); return l }
	for _, t := range list(body["tools"]) {
		add("tool", t)
	}
	switch sys := body["system"].(type) {
	case string:
		add("system", map[string]any{"type": "text", "text": sys})
	case []any:
		for _, b := range sys {
			add("system", b)
		}
	}
	for _, m := range list(body["messages"]) {
		msg, _ := m.(map[string]any)
		for _, b := range list(msg["content"]) {
			add(msg["role"], b)
		}
	}
	return texts, marks
}

// AnthropicText is a text block of a reply.
func AnthropicText(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

// AnthropicToolUse is a tool_use block calling name with input.
func AnthropicToolUse(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// WriteAnthropicMessage answers with an assistant message of content
// (AnthropicText and AnthropicToolUse blocks), stop reason "tool_use" when
// it calls a tool and "end_turn" when not, and usage: as JSON, or, when
// stream, as the Messages API's event stream (each text in one
// text_delta, each tool input in one input_json_delta).
func WriteAnthropicMessage(w http.ResponseWriter, stream bool, content []map[string]any, usage AnthropicUsage) {
	stop := "end_turn"
	for _, b := range content {
		if b["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	msg := map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage}
	if !stream {
		msg["content"], msg["stop_reason"] = content, stop
		WriteJSON(w, http.StatusOK, msg)
		return
	}
	msg["content"] = []any{}
	events := []map[string]any{{"type": "message_start", "message": msg}}
	for i, b := range content {
		start, delta := map[string]any{}, map[string]any{}
		for k, v := range b {
			start[k] = v
		}
		if b["type"] == "tool_use" {
			input, _ := json.Marshal(b["input"])
			start["input"] = map[string]any{}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		} else {
			start["text"] = ""
			delta = map[string]any{"type": "text_delta", "text": b["text"]}
		}
		events = append(events,
			map[string]any{"type": "content_block_start", "index": i, "content_block": start},
			map[string]any{"type": "content_block_delta", "index": i, "delta": delta},
			map[string]any{"type": "content_block_stop", "index": i})
	}
	events = append(events,
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": usage.OutputTokens}},
		map[string]any{"type": "message_stop"})
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range events {
		data, _ := json.Marshal(ev)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
}
