// Package anthropic is deepgraph's llm.Model for Anthropic's Messages API
// (Claude).
//
// It is built on github.com/tmc/langchaingo (llms/anthropic) — which builds the
// request and runs the HTTP exchange — behind deepgraph's own llm.Model, so
// langchaingo stays an implementation detail that can be replaced without
// touching callers.
//
// # Configuration
//
// New reads what Config leaves empty from the environment:
//
//	ANTHROPIC_API_KEY   the key, sent as x-api-key (required for api.anthropic.com; errors name the variable)
//	ANTHROPIC_BASE_URL  the API root as in Anthropic's SDKs (default https://api.anthropic.com)
//
// Requests go to POST {base}/v1/messages with anthropic-version 2023-06-01.
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
//	                     cache reads = CachedTokens, output_tokens = CompletionTokens
//	images               user images as base64 image blocks; tool-result images in the
//	                     user turn after the results
//	Google Search        not available: llm.ErrUnsupported
//
// # How langchaingo's limits are worked around
//
// langchaingo v0.1.14 reads only the first part of an assistant message
// (text or one tool call), never sends tool_choice, always sends a
// temperature, re-encodes tool input through map[string]any (numbers lose
// precision), folds HTTP errors into strings, treats a stream cut before
// message_stop as an empty reply, logs unknown stream events with the
// standard logger, keeps reading after an error event (its goroutine then
// blocks forever), fails on event lines over 64 KiB, and rejects a complete
// reply that has no content blocks.
// The package therefore splits each assistant message into one message per
// part and puts a small http.RoundTripper between langchaingo and the
// retrying transport. Each Generate call stores its needs in the request
// context; the transport merges consecutive messages of a role back into one
// turn, restores exact tool input, sets tool_choice, drops the temperature
// when none was asked for, records status, Retry-After and error body, reads
// model, stop reason, usage and exact tool input from the reply, assembles
// streamed replies itself (keeping over-long lines and unknown event types
// from langchaingo), and turns an error event or a premature end into a read
// error, so langchaingo stops cleanly and Generate reports it. langchaingo
// still builds every request, runs every exchange and parses non-streamed
// replies.
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
