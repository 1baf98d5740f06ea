// Package llm is deepgraph's provider-neutral layer over chat models: one
// small interface, neutral types for messages and tools, and the helpers
// every graph node needs on top — structured output, usage accounting per
// role, streaming into graph streams, and resilient HTTP.
//
// # The model
//
// A Model has one method:
//
//	Generate(ctx, msgs []schemas.Message, opts ...Option) (*Response, error)
//
// Messages, tool definitions and tool calls are the plain types of package
// schemas, so graph states hold them and checkpoint them as JSON. Options
// (Temperature, MaxTokens, Stop, Tools, WithToolChoice, ResponseSchema,
// GoogleSearch, OnDelta, Reasks) are functional options resolved into a
// Request with NewRequest; a provider reads the fields it supports and
// fails with ErrUnsupported on what it cannot do (GoogleSearch outside
// Gemini). A Response carries the text (and its Parts), separate reasoning
// text, tool calls, a normalised FinishReason, Usage and, for Gemini,
// search Grounding with UTF-8 byte offsets.
//
// # Structured output
//
// Structured[T] derives a JSON Schema from T (jsonschema-go: JSON names,
// `jsonschema:"…"` tags as descriptions, every non-omitempty field
// required), asks the provider for it natively (Request.Schema and
// SchemaName = the Go type's name, e.g. "SearchQueryList"; providers
// without a native mode add SchemaInstructions), reads the reply leniently
// (ExtractJSON: code fences, <think> blocks, prose, trailing commas,
// comments, smart quotes, …), validates it against the schema, and decodes
// it into T. An unusable reply is re-asked once by default, quoting the
// problem to the model (Reasks(n) to change; 0 to never); the final failure
// is a *StructuredError that keeps the raw replies and matches
// ErrInvalidReply. Unknown keys are ignored rather than rejected.
//
//	q, err := llm.Structured[schemas.SearchQueryList](ctx, model, msgs, llm.Temperature(1))
//
// # Tools
//
// Tools(defs...) offers schemas.ToolDef values (JSON Schema parameters);
// WithToolChoice forces auto, none, required or one named tool. The model's
// calls come back as schemas.ToolCall with raw JSON arguments — untrusted
// input: validate before use (ExtractJSON repairs what models commonly get
// wrong). Answer each call with schemas.ToolResultMessage. Tool names may
// hold a '.' (MCP's server.tool); providers whose APIs reject it send such
// names encoded and name the reply's calls back (ToolNames), so callers
// only ever see the real names.
//
// # Usage per role
//
// Each Response reports its Usage. Roles (RoleQuery, RoleResearch,
// RoleReflection, RoleAnswer, RoleAgent, or your own strings) say what a
// call was for. Metered(model, meter, role) records every call — count,
// failures, tokens — in a Meter, which is safe for concurrent use and
// whose Snapshot is a UsageByRole. UsageByRole.Merge never mutates its
// inputs, so it serves as a graph state reducer
// (graph.Reduce(get, llm.UsageByRole.Merge)) and the CLI can print totals
// per role and per run. A step that fails after spending — a graph node
// whose model call broke — returns a *UsageError carrying what it spent
// (UsageOfError reads it), so a failed attempt's tokens are not lost.
//
// # Cost
//
// Price is a model's price in US dollars per million tokens: input,
// output, cached input (prompt tokens read from the provider's cache) and
// cache writes (prompt tokens written to it), the last two priced apart. PriceFor knows the list prices of the providers' default
// models and a few siblings as of PricesAsOf; ollama: models are free
// (local); any other model, compatible: ones included, is unknown — never
// priced at zero. Prices overrides the table per spec (the config file's
// prices key), and Prices.CostOf prices a UsageByRole given each role's
// model. CostLimited and Spend stop a run's calls once it has spent a
// limit (ErrCostLimit). A failed call's tokens (APIError.Usage) are counted
// by Metered and CostLimited like a successful one's.
//
// # Streaming
//
// OnDelta makes a call stream: the callback receives each Delta (content
// and reasoning) in order while Generate still returns the complete
// Response. Inside a graph node, EmitDeltas(ctx, role) forwards each delta
// to the run's stream as an llm.Token custom event (graph.Emit) — the path
// tokens take to the CLI and, later, SSE clients — and costs nothing when
// nobody streams the run. Stream(ctx, model, msgs) is the same as an
// iterator; breaking out of the loop cancels the call and waits for it.
// A Delta (and Token) with Restart set says the stream broke off and the call
// is being sent again: drop what this call showed so far; the deltas that
// follow start the reply anew.
//
// # Resilience
//
// Providers take a ClientConfig: retries with exponential backoff and
// jitter on 429, 5xx, dropped connections and streams cut off (honouring
// Retry-After), all in one loop, CallModel's, with one budget per call; an
// optional bound on requests in flight (MaxConcurrency: none by default, so
// a run's fan-out is never split into waves; set it for a provider's rate
// limit, on a client every run sharing that quota uses), and a per-call
// timeout that surfaces as an
// *APIError matching ErrTimeout. Errors name the provider and, for a
// rejected key, the environment variable it came from — never the key.
// Callers branch with errors.Is on ErrRateLimited, ErrAuth, ErrBadRequest,
// ErrUnavailable, ErrTimeout, ErrStreamBroken, ErrUnsupported; IsTransient
// says whether an error is worth trying again later, and IsFinal whether the
// client already did (the retry condition of the model-calling nodes of
// packages nodes and research is IsTransient and not IsFinal, so that a
// node's retries do not multiply the client's: with retries 3 a call is
// sent at most 4 times, not 4 per node attempt).
//
// A stream cut off after its 200 — the connection dropped, the body ended
// before the API's final event, an "overloaded" error event mid-stream — is
// retried like a status or a dropped connection: CallModel sends such a
// call again whole, within the same budget (MaxRetries, backoff, timeout).
// The HTTP client (ClientConfig.Client) and the vendors' SDKs do not retry.
// A provider adopts it thus. Generate runs the request through CallModel,
// passing the request's OnDelta, and streams each attempt to the callback
// CallModel hands it (nil when not streaming), never to Request.OnDelta:
//
//	return llm.CallModel(ctx, cfg, "acme", req.OnDelta,
//		func(ctx context.Context, onDelta func(llm.Delta)) (*llm.Response, error) {
//			return m.send(ctx, req, onDelta)
//		})
//
// A stream that stops before its final event fails with an *APIError
// (Status 0) whose Err matches ErrStreamBroken — for example
// fmt.Errorf("%w: %w", llm.ErrStreamBroken, readErr) — and so also matches
// ErrUnavailable. Refusals and malformed replies must not match it: they are
// not retried. Tokens the provider reported before the cut may go in the
// error's Usage; CallModel adds them to the final Response.Usage.
//
// When an attempt that had already delivered deltas breaks, the caller's
// OnDelta receives Delta{Restart: true} before the next attempt's first
// delta. When every attempt breaks, the error names the provider and says
// how many attempts were cut off.
//
// # Providers and model specs
//
// Providers live in sub-packages so a program compiles only those it uses:
// llm/gemini (the Gemini REST API; Google Search grounding), llm/openai
// (OpenAI and OpenAI-compatible servers: Ollama's /v1, vLLM, llama.cpp, LM
// Studio, OpenRouter, DeepSeek) and llm/anthropic. Configuration names a
// model as "provider:model" — "gemini:gemini-2.5-flash",
// "ollama:qwen3:8b" — and ParseSpec splits it at the first colon; the
// mapping to constructors lives with the configuration, since providers
// import this package. llm/openai and llm/anthropic are built on the vendors'
// Go SDKs (their retries off: CallModel retries); llm/gemini on its own REST
// client (its package doc says why). llm/langchaingo adapts any langchaingo
// model — Bedrock, Vertex, Mistral, … — and tool. llm/fake is a scripted
// Model for tests.
//
// # Prompt caching
//
// CachePrompt marks a call as one of a series that resends a long prefix (an
// agent's steps); providers cache it (Anthropic breakpoints, OpenAI's
// prompt_cache_key; Gemini caches implicitly). Usage reports what was read
// from a cache (CachedTokens) and written to it (CacheWriteTokens), and
// Price prices both apart (CachedInput, CacheWrite).
package llm
