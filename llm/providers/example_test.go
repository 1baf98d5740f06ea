package providers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/providers"
	"github.com/deepgraph/deepgraph/schemas"
)

// Opening a model on an OpenAI-compatible server (here a stand-in for vLLM)
// from settings in the environment.
func ExampleOpen() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"Qwen/Qwen3-8B","choices":[{"index":0,
			"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":14,"completion_tokens":2,"total_tokens":16}}`)
	}))
	defer srv.Close()

	environment := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
	opts := providers.Options{Getenv: func(name string) string { return environment[name] }}

	model, err := providers.Open(context.Background(), "compatible:Qwen/Qwen3-8B", opts)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := model.Generate(context.Background(), []schemas.Message{
		schemas.UserMessage("What is the capital of France? One word."),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Content, resp.Usage.TotalTokens)
	// Output: Paris. 16
}

// A missing key says where it goes.
func ExampleOpen_missingKey() {
	opts := providers.Options{Getenv: func(string) string { return "" }}
	_, err := providers.Open(context.Background(), "anthropic:claude-sonnet-4-5", opts)
	fmt.Println(errors.Is(err, llm.ErrAuth))
	fmt.Println(err)
	// Output:
	// true
	// anthropic:claude-sonnet-4-5 needs an Anthropic API key: set ANTHROPIC_API_KEY in the environment, or anthropic_api_key in the config file (keys: https://console.anthropic.com/settings/keys)
}

// Choosing a model when none is configured.
func ExampleDefault() {
	environment := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-…", "OLLAMA_HOST": "localhost:11434"}
	spec, ok := providers.Default(providers.Options{Getenv: func(name string) string { return environment[name] }})
	fmt.Println(spec, ok)

	spec, ok = providers.Default(providers.Options{Getenv: func(string) string { return "" }})
	fmt.Printf("%q %v\n", spec, ok)
	// Output:
	// anthropic:claude-sonnet-4-5 true
	// "" false
}

func ExampleHowToConfigure() {
	fmt.Print(providers.HowToConfigure())
	// Output:
	// No language model is configured. Set one of these environment variables:
	//
	//   GEMINI_API_KEY     Google Gemini, the default (gemini:gemini-2.5-flash);
	//                      get a key at https://aistudio.google.com/apikey
	//   OPENAI_API_KEY     OpenAI (openai:gpt-4.1-mini)
	//   OPENAI_BASE_URL    an OpenAI-compatible server such as vLLM, LM Studio,
	//                      llama.cpp, OpenRouter or DeepSeek, e.g.
	//                      http://localhost:8000/v1; its key, if any, goes in
	//                      OPENAI_API_KEY; choose its model with compatible:<model>
	//   ANTHROPIC_API_KEY  Anthropic Claude (anthropic:claude-sonnet-4-5)
	//   OLLAMA_HOST        local models through Ollama, e.g. localhost:11434,
	//                      with a pulled model such as ollama:qwen3:8b
	//
	// Choose the model with --model provider:model (providers: gemini, openai,
	// anthropic, ollama, compatible), or set it in the config file. The settings
	// above can go in the config file too: gemini_api_key, openai_api_key,
	// openai_base_url, anthropic_api_key, ollama_host.
}
