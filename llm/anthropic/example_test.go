package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/anthropic"
	"github.com/deepgraph/deepgraph/schemas"
)

// A fake server stands in for api.anthropic.com.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
			"content":[{"type":"text","text":"Paris."}],"stop_reason":"end_turn",
			"usage":{"input_tokens":14,"output_tokens":4}}`)
	}))
	defer srv.Close()

	m, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), []schemas.Message{
		schemas.SystemMessage("Answer in one word."),
		schemas.UserMessage("What is the capital of France?"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Content, resp.FinishReason, resp.Usage.TotalTokens)
	// Output: Paris. stop 18
}

// Structured output travels as a forced tool call; its input is the reply.
func Example_structured() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":30,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Reflection","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"is_sufficient\":true,"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"knowledge_gap\":\"\",\"follow_up_queries\":[]}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}

event: message_stop
data: {"type":"message_stop"}

`)
	}))
	defer srv.Close()

	m, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	schema, err := jsonschema.For[schemas.Reflection](nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(),
		[]schemas.Message{schemas.UserMessage("Are these summaries enough?")},
		llm.ResponseSchema("Reflection", schema),
		llm.OnDelta(func(d llm.Delta) { fmt.Printf("[%s]", d.Content) }))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(resp.Content, resp.FinishReason, len(resp.ToolCalls))
	// Output:
	// [{"is_sufficient":true,]["knowledge_gap":"","follow_up_queries":[]}]
	// {"is_sufficient":true,"knowledge_gap":"","follow_up_queries":[]} stop 0
}

// A call marked llm.CachePrompt carries cache breakpoints; one ends the
// newest turn before its Transient messages, which the next call of the
// series does not resend. The fake server answers with the text of the
// block that carries it, and usage that reads from the cache.
func Example_cachePrompt() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content []struct {
					Text         string    `json:"text"`
					CacheControl *struct{} `json:"cache_control"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		marked := ""
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.CacheControl != nil {
					marked = b.Text
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": "breakpoint after: " + marked}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": 12, "output_tokens": 6, "cache_read_input_tokens": 2048}})
	}))
	defer srv.Close()

	m, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), []schemas.Message{
		schemas.UserMessage("The question and what was found so far."),
		schemas.UserMessage("Finding 1."),
		schemas.UserMessage("Finding 2."),
		{Role: schemas.User, Content: "What to do with it this time.", Transient: true},
	}, llm.CachePrompt())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Content)
	fmt.Println(resp.Usage.PromptTokens, "input tokens,", resp.Usage.CachedTokens, "read from the cache")
	// Output:
	// breakpoint after: Finding 2.
	// 2060 input tokens, 2048 read from the cache
}
