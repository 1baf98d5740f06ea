// Package gemini is deepgraph's Google Gemini provider: an llm.Model backed
// by the Gemini API (generativelanguage.googleapis.com), with Google Search
// grounding, native structured output, function calling and streaming.
//
//	model, err := gemini.NewFromEnv(ctx, gemini.Config{Model: "gemini-2.5-flash"})
//	resp, err := model.Generate(ctx, msgs, llm.GoogleSearch())
//	for _, s := range resp.Grounding.Supports {
//		cited := resp.Parts[s.PartIndex][s.StartIndex:s.EndIndex] // byte offsets
//		…
//	}
//
// # Its own REST client
//
// The package speaks the Gemini API's REST protocol itself (v1beta
// models/{model}:generateContent, and :streamGenerateContent?alt=sse for
// streaming, the key in the x-goog-api-key header) with encoding/json and
// typed structs, and compiles nothing outside the standard library but
// deepgraph's own packages and github.com/google/jsonschema-go. Google's
// SDK, google.golang.org/genai, was used until it showed its cost: it
// compiles cloud.google.com/go/auth, s2a-go, gRPC and protobuf (426
// packages for this package alone, 200 now) and writes warnings with the
// standard log package, past any --quiet. The older
// github.com/google/generative-ai-go is end-of-life and has neither the
// google_search tool nor grounding metadata.
//
// Prompt caching is implicit: the Gemini API caches repeated prompt
// prefixes by itself, so llm.CachePrompt needs nothing sent, and the cached
// part it reports (usageMetadata.cachedContentTokenCount) is
// Usage.CachedTokens, priced at the cached-input price.
//
// A program that uses only Gemini imports this package (and research, if
// it wants the deep-search graph); llm/providers, which maps "provider:model"
// specs to models, compiles every provider.
//
// # Configuration
//
// Config.APIKey is required. NewFromEnv fills it from GEMINI_API_KEY, else
// GOOGLE_API_KEY, and remembers which, so a rejected key is reported as
// "GEMINI_API_KEY was rejected (401): …"; keys are never printed. Get one at
// https://aistudio.google.com/apikey. GOOGLE_GEMINI_BASE_URL (or
// Config.BaseURL, an http(s) URL without a query; New refuses others)
// points the client at a proxy or test server. The model defaults to
// gemini-2.5-flash. Only the Gemini API backend is supported, not Vertex AI.
//
// Config.Client (llm.ClientConfig) sets retries with backoff on 429, 5xx and
// dropped connections (honouring Retry-After), a bound on requests in
// flight, and the per-call timeout; llm.CallModel's loop makes the only
// retries (one budget per call). 400, 401 and
// 403 are never retried. Nothing is printed: Config.Logger gets debug
// records, and everything else is in the returned errors.
//
// # Requests
//
//   - System messages become the system instruction; assistant messages the
//     "model" role; tool results functionResponse parts ({"output": content},
//     named by Message.Name or by the call they answer), consecutive results
//     in one turn, and consecutive user messages too; images inline data.
//   - Tool calls are sent back as functionCall parts carrying ToolCall.Signature
//     as the thought signature, which Gemini 3 requires. Calls the API sent
//     without an ID get one ("gemini-call-…"), which is kept on our side only.
//   - llm.Tools become function declarations with parametersJsonSchema,
//     under their own names: Gemini accepts '.', ':' and '-' in function
//     names (MCP's server.tool needs no encoding);
//     ToolChoice maps to functionCallingConfig (auto→AUTO, none→NONE,
//     required→ANY, a tool's name→ANY restricted to it).
//   - A response schema is sent natively as responseMimeType
//     "application/json" with responseJsonSchema (plain JSON Schema; the
//     OpenAPI-subset responseSchema rejects additionalProperties and type
//     arrays).
//   - llm.GoogleSearch adds the googleSearch tool.
//
// Combinations the API rejects: Google Search together with function tools
// fails with llm.ErrUnsupported before anything is sent (Gemini 2.x refuses
// it; Gemini 3 accepts it only when the server-side tool calls are sent back
// in later turns, which llm messages cannot carry). A response schema
// together with tools is refused by Gemini 1.x and 2.x models ("controlled
// generation is not supported with google_search tool"), so for model names
// of those families the schema goes into the system instruction instead
// (llm.SchemaInstructions) and llm.Structured parses the reply; other models
// get it natively, and should one still refuse, the 400 matches both
// llm.ErrBadRequest and llm.ErrUnsupported.
//
// # Replies
//
// Content is the concatenation of the non-thought text parts; Parts lists
// them in order; Reasoning holds thought summaries (Config.IncludeThoughts).
// Finish reasons are normalised (STOP with calls → tool_calls, MAX_TOKENS →
// length, safety-type reasons and blocked prompts → content_filter). Usage
// maps prompt (plus tool-use prompt tokens, billed as input), candidates →
// completion, total, cached, and thoughts → reasoning.
//
// Grounding keeps the web search queries, the web chunks (other kinds are
// left out and indices renumbered), the supports and the search entry
// point's rendered HTML, which Google's terms ask clients to show. The API
// counts a segment's partIndex over all parts of the reply (thought and call
// parts included; that is how Google's SDK shifts it when it joins
// continued replies); this package translates it into an index into
// Response.Parts. StartIndex and EndIndex are UTF-8 byte offsets into that
// part, i.e. Go string indices: they are clamped to the part, moved onto
// rune boundaries, and, when they do not cover the segment text the API sent
// with them, replaced by that text's nearest occurrence. Supports that still
// point nowhere are dropped. Missing metadata, chunks or supports never
// panic; an omitted startIndex or partIndex means 0.
//
// # Streaming
//
// With llm.OnDelta the call uses streamGenerateContent over server-sent
// events, reports each text piece (thought text as Delta.Reasoning), and
// returns the same Response a unary call would: consecutive text chunks of a
// kind are joined into one part, as the API counts them; usage and grounding
// come from the last chunk carrying them. A stream that ends before a finish
// reason, is cut inside an event, drops, or carries an error event of a
// retryable status (429, 5xx) is broken: llm.CallModel sends the call again
// within Config.Client's retries, observers first receiving
// Delta{Restart: true}, and tokens the broken attempt reported are added to
// the final usage. When retries run out the error matches
// llm.ErrStreamBroken (and llm.ErrUnavailable), never a silently partial
// reply. A refusal event, a malformed event or an over-long line is not a
// cut and is not sent again.
//
// # Errors
//
// API errors are *llm.APIError with Provider "gemini", the HTTP status, the
// API's message (without the key) and Retry-After (from the header, or the
// google.rpc.RetryInfo detail). The Gemini API answers an invalid key with
// 400 API_KEY_INVALID; that is reported as a 401, matching llm.ErrAuth. A
// per-call timeout matches llm.ErrTimeout; cancelling the context aborts the
// request in flight and returns the context's error.
package gemini
