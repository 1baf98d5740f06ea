package openai_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/openai"
	"github.com/deepgraph/deepgraph/schemas"
)

// A fake server stands in for OpenAI; point BaseURL at any compatible server.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"gpt-4.1-mini-2025-04-14","choices":[{"index":0,
			"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":14,"completion_tokens":2,"total_tokens":16}}`)
	}))
	defer srv.Close()

	m, err := openai.New(openai.Config{APIKey: "sk-example", BaseURL: srv.URL + "/v1"})
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
	// Output: Paris. stop 16
}

// Streaming from a local Ollama (OLLAMA_HOST="host:port" works too), asking
// for a reply that matches a schema.
func ExampleNewOllama() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{`{\"query\":[\"go`, ` generics\"],`, `\"rationale\":\"basics\"}`} {
			fmt.Fprintf(w, "data: {\"model\":\"qwen3\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", piece)
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	host := strings.TrimPrefix(srv.URL, "http://")
	m, err := openai.NewOllama(openai.Config{
		Model:  "qwen3",
		Getenv: func(k string) string { return map[string]string{"OLLAMA_HOST": host}[k] },
	})
	if err != nil {
		log.Fatal(err)
	}
	schema, err := jsonschema.For[schemas.SearchQueryList](nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(),
		[]schemas.Message{schemas.UserMessage("Plan searches about Go generics.")},
		llm.ResponseSchema("search_queries", schema),
		llm.OnDelta(func(d llm.Delta) { fmt.Printf("[%s]", d.Content) }))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(resp.Content)
	// Output:
	// [{"query":["go][ generics"],]["rationale":"basics"}]
	// {"query":["go generics"],"rationale":"basics"}
}

// Without a key, New refuses api.openai.com and says what to set.
func ExampleNew_missingKey() {
	_, err := openai.New(openai.Config{Getenv: func(string) string { return "" }})
	fmt.Println(err)
	// Output: openai: no API key for api.openai.com: set OPENAI_API_KEY, or point OPENAI_BASE_URL at an OpenAI-compatible server (vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek), or use Ollama (OLLAMA_HOST, default http://localhost:11434): authentication failed
}
