// Package openai is deepgraph's llm.Model for the OpenAI Chat Completions API
// and every server that speaks it: OpenAI, Ollama's /v1 endpoint, vLLM, the
// llama.cpp server, LM Studio, OpenRouter and DeepSeek.
//
// It is built on github.com/tmc/langchaingo (llms/openai) — which builds the
// request and runs the HTTP exchange — behind deepgraph's own llm.Model, so
// langchaingo stays an implementation detail that can be replaced without
// touching callers.
//
// # Configuration
//
// New reads what Config leaves empty from the environment:
//
//	OPENAI_API_KEY   the key (required for api.openai.com only; errors name the variable)
//	OPENAI_BASE_URL  the API root, e.g. http://localhost:8000/v1 (default https://api.openai.com/v1)
//
// NewOllama targets Ollama: the base URL comes from OLLAMA_HOST (default
// http://localhost:11434; "host:port" without a scheme is fine) plus "/v1", no
// key is needed and OPENAI_API_KEY is never sent there. Servers without a key
// get no Authorization header at all.
//
// Knobs for servers that differ from OpenAI: SchemaMode (how structured output
// is requested), TokenField (max_tokens or max_completion_tokens),
// NoStreamUsage (drop stream_options), Header (extra headers such as
// OpenRouter's X-Title), Provider (the name errors use). Config.Client carries
// retries with backoff and Retry-After, the concurrency bound and the per-call
// timeout (llm.ClientConfig).
//
// # Native and fallback
//
//	feature              how
//	-------------------  ----------------------------------------------------------------
//	structured output    native: response_format json_schema with the full schema, per call;
//	                     strict when StrictCompatible(schema), else strict:false.
//	                     fallback: SchemaJSONObject (json_object + schema in the system
//	                     prompt, for DeepSeek) or SchemaPrompt (schema in the prompt only)
//	tools                native: tools/tool_choice (auto, none, required, one function),
//	                     parallel calls, tool results by tool_call_id; names with a
//	                     '.' (MCP's server.tool) travel as server__tool and are named
//	                     back in replies (llm.ToolNames)
//	streaming            native SSE; content and reasoning deltas to llm.OnDelta; tool
//	                     calls assembled by index; usage via stream_options.include_usage
//	reasoning            reasoning_content (DeepSeek) or reasoning (Ollama, vLLM,
//	                     OpenRouter) → Response.Reasoning / Delta.Reasoning
//	images               user images as data: URLs; tool-result images go into a user
//	                     message after the tool results (the tool role is text-only)
//	Google Search        not available: llm.ErrUnsupported
//
// # How langchaingo's limits are worked around
//
// langchaingo v0.1.14 sets response_format once per client, with a schema
// type that cannot express anyOf, minimum/maximum, formats or $defs; it always
// sends a temperature; it reduces HTTP errors to strings and hides network
// errors; its streamed tool calls ignore the index and its stream callback
// passes tool-call JSON off as content; its line scanner fails on event
// lines over 64 KiB (Ollama sends a whole tool call in one chunk); and it
// accepts a stream that stops early, or whose context ends, as a complete
// reply. The package therefore puts a small
// http.RoundTripper between langchaingo and the retrying transport. Each
// Generate call stores its needs in the request context; the transport edits
// the JSON body (the full json_schema response_format, dropping temperature
// or stream_options), records status, Retry-After and error body, reads the
// fields langchaingo drops (model, "reasoning"), and assembles event streams
// itself: deltas, content, tool calls by index, usage, error objects; lines
// too long for langchaingo's scanner are kept from it, and a stream that ends
// before [DONE] or a finish_reason becomes an error instead of a partial
// reply. langchaingo still builds every request and runs every exchange.
//
// A transport keyed by the context was chosen over a bounded cache of
// langchaingo clients per schema: one client serves every schema, large or
// many schemas cost nothing, the schema goes out byte for byte, and there is
// no eviction policy to tune. The price is re-encoding the request body once.
//
// # Errors
//
// Failures are *llm.APIError with Provider set ("openai", "ollama" or
// Config.Provider), the HTTP status, the server's message with anything
// key-shaped masked, KeyEnv for 401/403 messages and RetryAfter. errors.Is
// matches llm.ErrBadRequest (400, 404, 422), llm.ErrAuth (401, 403),
// llm.ErrRateLimited (429 after retries), llm.ErrUnavailable (5xx after
// retries, network failures, streams that break off) and llm.ErrTimeout (the
// per-call timeout). Cancelling the context aborts the request in flight and
// returns the context's error.
//
// # Example
//
//	m, err := openai.New(openai.Config{Model: "gpt-4.1-mini"}) // key from OPENAI_API_KEY
//	if err != nil { … }
//	resp, err := m.Generate(ctx, []schemas.Message{schemas.UserMessage("Hello")},
//		llm.OnDelta(func(d llm.Delta) { fmt.Print(d.Content) }))
package openai
