// Package langchaingo adapts github.com/tmc/langchaingo to deepgraph, for its
// breadth: any langchaingo llms.Model — Bedrock, Vertex, Mistral, Cohere,
// Hugging Face, watsonx, Ollama's native API, … — becomes an llm.Model (New),
// and any langchaingo tools.Tool a deepgraph tools.Tool (Tool).
//
// deepgraph's own providers (llm/openai, llm/anthropic on the vendors' SDKs,
// llm/gemini on its REST API) do not use langchaingo; this package is the one
// place in the module that imports it, so programs that do not import it do
// not compile it.
//
// # What the adapted model does
//
//	feature              how
//	-------------------  ----------------------------------------------------------------
//	text                 messages as langchaingo MessageContent (system, human, AI, tool)
//	streaming            llm.OnDelta through WithStreamingFunc (content) and
//	                     WithStreamingReasoningFunc (thinking), where the backend streams
//	tools                WithTools and WithToolChoice, where the backend supports them;
//	                     the reply's tool calls come back as schemas.ToolCall
//	structured output    the schema in the system prompt (llm.SchemaInstructions) and
//	                     JSON mode; llm.Structured reads the reply leniently and repairs it
//	usage                the PromptTokens/CompletionTokens/TotalTokens (or Input/Output)
//	                     counters backends put in GenerationInfo
//	Google Search        not available: llm.ErrUnsupported
//
// Errors are the backend's, prefixed with the adapter's name; the caller's
// cancellation is returned as the context's error. Retries are the backend's
// own: langchaingo reports no statuses to retry on.
//
// # Example
//
//	lc, err := bedrock.New(bedrock.WithModel("anthropic.claude-3-5-haiku"))
//	…
//	model := langchaingo.New(lc, "bedrock")
//	resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage("Hello")})
package langchaingo
