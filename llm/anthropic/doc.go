// Package anthropic is deepgraph's llm.Model for Anthropic's Messages API
// (Claude).
//
// It is built on Anthropic's Go SDK, github.com/anthropics/anthropic-sdk-go/v2:
// the SDK's typed parameters build each request, its client runs the exchange
// and its types and SSE decoder read the replies, behind deepgraph's own
// llm.Model.
//
// # Configuration
//
// New reads what Config leaves empty from the environment:
//
//	ANTHROPIC_API_KEY   the key, sent as x-api-key (required for api.anthropic.com; errors name the variable)
//	ANTHROPIC_BASE_URL  the API root as in Anthropic's SDKs (default https://api.anthropic.com)
//
// Requests go to POST {base}/v1/messages with anthropic-version 2023-06-01
// (APIVersion) and the key as x-api-key.
// Anthropic requires a reply cap: Config.MaxTokens (default 8192) applies
// when a call sets none. Config.Client carries retries with backoff and
// Retry-After (429, 5xx and 529 overloaded), the concurrency bound and the
// per-call timeout (llm.ClientConfig). Config.Header adds headers such as
// anthropic-beta.
//
// # Native and fallback
//
//	feature              how
//	-------------------  ----------------------------------------------------------------
//	structured output    fallback through a forced tool call: one tool named after the schema
//	                     (input_schema = the full schema; non-object roots wrapped as
//	                     {"value": …}), tool_choice that tool; its input becomes
//	                     Response.Content, so llm.Structured parses it like any reply.
//	                     With other tools offered, tool_choice is "any".
//	tools                native: tools, tool_choice (auto, none, any for required, one tool),
//	                     several tool_use blocks per reply, tool results as tool_result
//	                     blocks in the following user turn; names with a '.' (MCP's
//	                     server.tool) travel as server__tool and are named back in
//	                     replies (llm.ToolNames)
//	system messages      native: joined into the top-level system field, wherever they occur
//	streaming            native SSE (message_start, content_block_*, message_delta,
//	                     message_stop, ping, error); text and thinking deltas to
//	                     llm.OnDelta, the structured reply's JSON streams as content
//	usage                input_tokens + cache writes + cache reads = PromptTokens,
//	                     cache reads = CachedTokens, cache writes = CacheWriteTokens,
//	                     output_tokens = CompletionTokens
//	prompt caching       calls marked llm.CachePrompt: cache_control breakpoints on the
//	                     last tool, the system prompt, the turn before the newest and
//	                     the newest, so the next call of the series reads that prefix;
//	                     a turn ends before its Transient messages (shown for one call)
//	images               user images as base64 image blocks; tool-result images in the
//	                     user turn after the results
//	Google Search        not available: llm.ErrUnsupported
//
// # On the SDK
//
// The SDK's own retries are off (option.WithMaxRetries(0)), and the HTTP
// client of llm.ClientConfig does not retry: llm.CallModel is the one retry
// loop, with one budget per call. Its
// environment defaults are off too (option.WithoutEnvironmentDefaults): New
// reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL itself, and nothing else
// (auth tokens, profiles) is sent. One request middleware
// (llm/internal/sdkwire) adds Config.Header, keeps keyless gateways keyless
// and turns an error status into an error that keeps the body. Tool input
// is sent and read as exact JSON (json.RawMessage), so large numbers keep
// their digits. The v2 SDK's types no longer carry temperature and the
// system prompt as text; the package sends them as the extra fields the SDK
// provides for that (SetExtraFields), as API version 2023-06-01 takes them,
// and tool results as text. Streams are opened as NewStreaming opens them,
// to see the Content-Type and a body cut inside an event line; a stream
// that ends before message_stop, or with an overloaded or rate-limit error
// event, is cut off (llm.ErrStreamBroken), and llm.CallModel sends it again.
//
// # Errors
//
// Failures are *llm.APIError with Provider "anthropic" (or Config.Provider),
// the HTTP status — for an error event inside a stream, the status its type
// stands for (overloaded_error is 529) — the server's message with anything
// key-shaped masked, KeyEnv for 401/403 messages and RetryAfter. errors.Is
// matches llm.ErrBadRequest, llm.ErrAuth, llm.ErrRateLimited,
// llm.ErrUnavailable (5xx, 529, network failures, streams that break off)
// and llm.ErrTimeout. Cancelling the context aborts the request in flight
// and returns the context's error.
//
// # Example
//
//	m, err := anthropic.New(anthropic.Config{}) // key from ANTHROPIC_API_KEY
//	if err != nil { … }
//	v, err := llm.Structured[schemas.Reflection](ctx, m, msgs)
package anthropic
