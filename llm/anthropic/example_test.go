package anthropic_test

import (
	"context"
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
