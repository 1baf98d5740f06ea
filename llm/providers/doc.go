// Package providers maps a model spec such as "gemini:gemini-2.5-flash" to
// a configured llm.Model. It is the one place that knows every provider
// package (llm/gemini, llm/openai, llm/anthropic); package llm cannot, since
// those import it. Programs that want a single provider can import that
// package alone and skip this one.
//
// # Specs and settings
//
// A spec is "provider:model" (llm.ParseSpec). Open reads what each provider
// needs from Options, else from the environment, through Options.Getenv:
//
//	spec              provider                    settings
//	gemini:MODEL      Google Gemini API           GEMINI_API_KEY or GOOGLE_API_KEY
//	openai:MODEL      OpenAI Chat Completions     OPENAI_API_KEY, OPENAI_BASE_URL (optional)
//	anthropic:MODEL   Anthropic Messages API      ANTHROPIC_API_KEY
//	ollama:MODEL      Ollama (OpenAI-compatible)  OLLAMA_HOST (default localhost:11434)
//	compatible:MODEL  an OpenAI-compatible server OPENAI_BASE_URL (required), OPENAI_API_KEY
//
// In a configuration file the same settings are gemini_api_key,
// openai_api_key, openai_base_url, anthropic_api_key and ollama_host (the
// Config… constants); the configuration layer passes them in Options, where
// they win over the environment. Timeouts, retries and the concurrency
// bound come from Options.Client (llm.ClientConfig) and apply to every
// provider.
//
// A missing key is an error matching llm.ErrAuth, and a compatible server
// without a base URL one matching llm.ErrNoModel; both say which variable
// or config key to set. Keys never appear in errors or logs.
//
// # No model configured
//
// Default picks a model from the keys that are set (Gemini first, then
// OpenAI, Anthropic, and Ollama if OLLAMA_HOST is set); when none is,
// HowToConfigure is the text to show the user.
//
// # Example
//
//	opts := providers.Options{Client: llm.ClientConfig{Timeout: time.Minute}}
//	spec := cfg.Model // e.g. from --model
//	if spec == "" {
//		var ok bool
//		if spec, ok = providers.Default(opts); !ok {
//			fmt.Fprint(os.Stderr, providers.HowToConfigure())
//			os.Exit(2)
//		}
//	}
//	model, err := providers.Open(ctx, spec, opts)
package providers
