// Package openai is deepgraph's llm.Model for the OpenAI Chat Completions API
// and every server that speaks it: OpenAI, Ollama's /v1 endpoint, vLLM, the
// llama.cpp server, LM Studio, OpenRouter and DeepSeek.
//
// It is built on OpenAI's Go SDK, github.com/openai/openai-go/v3: the SDK's
// typed parameters build each request, its client runs the exchange and its
// types and SSE decoder read the replies, behind deepgraph's own llm.Model.
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
//	user messages        consecutive text-only ones are sent as one (texts joined by a
//	                     blank line): some models' chat templates refuse two in a row
//	Google Search        not available: llm.ErrUnsupported
//
// # On the SDK
//
// The SDK's own retries are off (option.WithMaxRetries(0)), and the HTTP
// client of llm.ClientConfig does not retry: llm.CallModel is the one retry
// loop, with one budget per call. One
// request middleware (llm/internal/sdkwire) adds Config.Header, keeps
// keyless servers keyless (the SDK would send OPENAI_API_KEY from the
// environment) and turns an error status into an error that keeps the body,
// so messages in the shapes compatible servers use (vLLM's "message",
// "detail", plain text) reach the user. Streams are opened as NewStreaming
// opens them — the request with "stream": true, the response to ssestream —
// to see the Content-Type (a server that ignores the request for a stream)
// and whether [DONE] came: a stream that ends without [DONE] or a
// finish_reason is cut off (llm.ErrStreamBroken), and llm.CallModel sends the
// call again. The fields compatible servers add (reasoning_content,
// reasoning, arguments sent as an object) are read from the SDK's
// ExtraFields and raw JSON.
//
// # Prompt caching
//
// OpenAI caches prompt prefixes of 1024 tokens and more by itself and
// reports the cached part (prompt_tokens_details.cached_tokens →
// Usage.CachedTokens). Calls marked llm.CachePrompt send a prompt_cache_key
// hashed from the run's stable prefix (model, system prompt, tools, first
// user turn), so the calls of one run reach the same cache; by default only
// to api.openai.com (Config.PromptCacheKey), since other servers may reject
// the field.
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
