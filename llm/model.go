package llm

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/schemas"
)

// Model is a chat model behind one provider. Implementations are safe for
// concurrent use.
//
// Generate sends the conversation and returns the complete reply. When the
// request has a Delta callback (see OnDelta) the provider streams and calls it
// with each piece of content as it arrives; the returned Response is the same
// as without streaming.
type Model interface {
	Generate(ctx context.Context, msgs []schemas.Message, opts ...Option) (*Response, error)
}

// Request is a Generate call's options, resolved. Providers read it with
// NewRequest; callers build it with Options.
type Request struct {
	Temperature *float64 // nil: the provider's default
	MaxTokens   int      // 0: the provider's default
	Stop        []string

	Tools      []schemas.ToolDef
	ToolChoice ToolChoice

	// Schema asks for a reply that is a JSON document matching it (structured
	// output). SchemaName names it where the provider wants a name. Models
	// must not modify it: Structured shares one schema per Go type among
	// concurrent calls.
	Schema     *jsonschema.Schema
	SchemaName string

	// GoogleSearch enables search grounding where the provider has it (Gemini).
	// Providers without it fail with ErrUnsupported.
	GoogleSearch bool

	// OnDelta, when set, makes the call stream: it is called, in order and
	// from one goroutine at a time, with each piece of content.
	OnDelta func(Delta)

	// CachePrompt says the call is one of a series that resend the same
	// prompt prefix (see CachePrompt): providers cache that prefix.
	CachePrompt bool

	// Reasks is how many times Structured asks again after a reply that does
	// not parse or match the schema; nil means DefaultReasks. It is read by
	// Structured only: providers ignore it.
	Reasks *int
}

// Option sets a field of a Request.
type Option func(*Request)

// NewRequest applies opts in order.
func NewRequest(opts ...Option) Request {
	var r Request
	for _, o := range opts {
		if o != nil {
			o(&r)
		}
	}
	return r
}

// Temperature sets the sampling temperature.
func Temperature(t float64) Option { return func(r *Request) { r.Temperature = &t } }

// MaxTokens caps the reply's length in tokens.
func MaxTokens(n int) Option { return func(r *Request) { r.MaxTokens = n } }

// Stop sets stop sequences.
func Stop(s ...string) Option { return func(r *Request) { r.Stop = append(r.Stop, s...) } }

// Tools offers tools to the model.
func Tools(defs ...schemas.ToolDef) Option {
	return func(r *Request) { r.Tools = append(r.Tools, defs...) }
}

// WithToolChoice says whether and which tool the model must call.
func WithToolChoice(c ToolChoice) Option { return func(r *Request) { r.ToolChoice = c } }

// ResponseSchema asks for a JSON reply that matches s. Most callers want
// Structured, which derives the schema from a Go type and parses the reply.
func ResponseSchema(name string, s *jsonschema.Schema) Option {
	return func(r *Request) { r.SchemaName, r.Schema = name, s }
}

// GoogleSearch turns on Google Search grounding (Gemini only).
func GoogleSearch() Option { return func(r *Request) { r.GoogleSearch = true } }

// CachePrompt marks a call as one of a series — an agent's steps, a research
// run's reflections and its answer — that resend a long, mostly identical
// prefix: the system prompt, the tools, the task and the earlier turns.
// Providers cache that prefix so the calls after the first read it at the
// cached-input price:
//
//   - Anthropic: cache_control breakpoints on the system prompt, the tools,
//     the turn before the newest one and the newest one, each ending before
//     its schemas.Message.Transient messages (a cache write costs more than
//     plain input, so calls that are not part of a series should not ask);
//   - OpenAI: a prompt_cache_key derived from the prefix (model, system
//     prompt, tools, first user turn), so a run's calls reach the same
//     cache; OpenAI caches prefixes of 1024 tokens and more by itself;
//   - Gemini: nothing to send, the API caches implicitly.
//
// Callers keep the stable part of a prompt first and the changing part last,
// the part shown for one call only marked Transient.
// What was read from and written to a cache comes back in Usage
// (CachedTokens, CacheWriteTokens).
func CachePrompt() Option { return func(r *Request) { r.CachePrompt = true } }

// OnDelta streams the reply's content to f.
func OnDelta(f func(Delta)) Option { return func(r *Request) { r.OnDelta = f } }

// ToolChoice is "" (provider default, usually auto), ToolAuto, ToolNone,
// ToolRequired, or the name of one tool the model must call.
type ToolChoice string

// Tool choices with a fixed meaning. Any other value names a tool.
const (
	ToolAuto     ToolChoice = "auto"
	ToolNone     ToolChoice = "none"
	ToolRequired ToolChoice = "required"
)

// Delta is a piece of a streamed reply.
type Delta struct {
	Content   string // visible text
	Reasoning string // thinking text, where the provider streams it separately
	// Restart says the stream broke off and the call is being sent again
	// (see CallModel): discard every delta of this call received so far;
	// the deltas that follow are the new attempt's, from its beginning. A
	// Restart delta carries no text. It is only sent after some text was.
	Restart bool
}

// Response is a model's complete reply.
type Response struct {
	// Content is the reply's text: the concatenation of Parts.
	Content string
	// Parts are the text parts of the reply in order, for providers whose
	// metadata points into parts (Gemini grounding offsets are relative to the
	// part named by PartIndex). Single-part providers leave it nil.
	Parts []string
	// Reasoning is thinking text the provider returned separately, if any.
	Reasoning string

	ToolCalls    []schemas.ToolCall
	FinishReason FinishReason
	Usage        Usage
	// Model is the model that answered, as the provider reports it.
	Model string
	// Grounding is Gemini's search grounding metadata; nil when absent.
	Grounding *Grounding
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons, normalised across providers.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
	FinishOther         FinishReason = "other"
)

// Usage is the token count of one call. Fields a provider does not report
// are zero.
//
// PromptTokens counts every input token, those read from and written to a
// provider's prompt cache included; CachedTokens is the part read from the
// cache (OpenAI's prompt_tokens_details.cached_tokens, Anthropic's
// cache_read_input_tokens, Gemini's cachedContentTokenCount) and
// CacheWriteTokens the part written to it (Anthropic's
// cache_creation_input_tokens, OpenAI's prompt_tokens_details.cache_write_tokens),
// which some providers price apart (Price).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Grounding is the search grounding metadata of a Gemini reply.
type Grounding struct {
	WebSearchQueries []string           `json:"web_search_queries,omitempty"`
	Chunks           []GroundingChunk   `json:"chunks,omitempty"`
	Supports         []GroundingSupport `json:"supports,omitempty"`
	// SearchEntryPoint is the rendered search-suggestions HTML that Google's
	// terms ask clients to show.
	SearchEntryPoint string `json:"search_entry_point,omitempty"`
}

// GroundingChunk is one web source the model grounded on.
type GroundingChunk struct {
	URI   string `json:"uri"`
	Title string `json:"title"`
}

// GroundingSupport ties a segment of the reply to the chunks that support it.
// StartIndex and EndIndex are UTF-8 byte offsets into the part named by
// PartIndex (start inclusive, end exclusive) — Go string indices.
type GroundingSupport struct {
	StartIndex   int       `json:"start_index"`
	EndIndex     int       `json:"end_index"`
	PartIndex    int       `json:"part_index"`
	Text         string    `json:"text,omitempty"`
	ChunkIndices []int     `json:"chunk_indices"`
	Confidence   []float64 `json:"confidence,omitempty"`
}
