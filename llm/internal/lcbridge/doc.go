// Package lcbridge holds what deepgraph's providers built on
// github.com/tmc/langchaingo (llm/openai, llm/anthropic) share above the
// HTTP layer, which is llm/internal/wiretap: tool definitions in
// langchaingo's form, a model's tool-call arguments made safe to keep, the
// counters of langchaingo's GenerationInfo, generated call IDs, and a
// GenerateContent that survives langchaingo's panics on malformed replies.
//
//	wire, err := llm.NewToolNames(req.Tools)
//	…
//	tools, names, err := lcbridge.Tools(req.Tools, wire) // definitions under their wire names
//	…
//	resp, err := lcbridge.Generate(ctx, lc, msgs, opts...) // a panic becomes wiretap.ErrMalformed
//	…
//	call := schemas.ToolCall{ID: id, Name: name, Arguments: lcbridge.ToolCallArguments(text)}
package lcbridge
