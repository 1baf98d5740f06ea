package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// ErrExhausted is returned (wrapped) when a call finds no scripted reply
// left for it. The message says how many calls were scripted and made.
var ErrExhausted = errors.New("fake: no scripted reply left for this call")

// DefaultChunk is how many characters (runes) each streamed delta carries
// unless a Reply says otherwise with Chunks.
const DefaultChunk = 8

// Call is one call the Model received.
type Call struct {
	Index    int               // 0 for the first call the Model received
	Messages []schemas.Message // the conversation, copied
	Request  llm.Request       // the options, resolved with llm.NewRequest
}

// LastMessage returns the last message of the conversation (zero if none).
func (c Call) LastMessage() schemas.Message {
	if len(c.Messages) == 0 {
		return schemas.Message{}
	}
	return c.Messages[len(c.Messages)-1]
}

// Matcher decides whether a scripted Reply answers a call.
type Matcher func(Call) bool

// Contains matches calls whose last message contains s.
func Contains(s string) Matcher {
	return func(c Call) bool { return strings.Contains(c.LastMessage().Content, s) }
}

// AnyContains matches calls with any message containing s.
func AnyContains(s string) Matcher {
	return func(c Call) bool {
		return slices.ContainsFunc(c.Messages, func(m schemas.Message) bool { return strings.Contains(m.Content, s) })
	}
}

// Schema matches calls asking for structured output named name (what
// llm.Structured sets: the Go type's name, e.g. "Reflection").
func Schema(name string) Matcher {
	return func(c Call) bool { return c.Request.SchemaName == name }
}

// HasTool matches calls that offer a tool named name.
func HasTool(name string) Matcher {
	return func(c Call) bool {
		return slices.ContainsFunc(c.Request.Tools, func(t schemas.ToolDef) bool { return t.Name == name })
	}
}

// All matches calls that every matcher matches.
func All(ms ...Matcher) Matcher {
	return func(c Call) bool {
		for _, m := range ms {
			if m != nil && !m(c) {
				return false
			}
		}
		return true
	}
}

// Reply is one scripted answer. Build it with Text, JSON, ToolCalls or
// Error and refine it with its methods, which return modified copies.
type Reply struct {
	resp   llm.Response
	err    error
	delay  time.Duration
	block  bool
	match  Matcher
	chunk  int
	repeat bool
	desc   string // what the reply is, for messages
}

// Text is a reply with content s (finish reason stop).
func Text(s string) Reply {
	return Reply{resp: llm.Response{Content: s, FinishReason: llm.FinishStop}, desc: "text"}
}

// JSON is a reply whose content is v marshalled to JSON, as a provider in
// structured-output mode returns it. Pass a string or json.RawMessage to
// script raw (possibly malformed) JSON text. If v cannot be marshalled, the
// call using the reply fails with the marshalling error.
func JSON(v any) Reply {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.RawMessage:
		text = string(v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return Reply{err: fmt.Errorf("fake: the scripted JSON reply (%T) does not marshal: %w", v, err), desc: "JSON"}
		}
		text = string(data)
	}
	r := Text(text)
	r.desc = "JSON"
	return r
}

// ToolCalls is a reply asking for tool calls (finish reason tool_calls).
// Calls without an ID get "call_<call index>_<n>".
func ToolCalls(calls ...schemas.ToolCall) Reply {
	return Reply{resp: llm.Response{ToolCalls: slices.Clone(calls), FinishReason: llm.FinishToolCalls}, desc: "tool calls"}
}

// ToolCall builds a tool call whose arguments are args marshalled to JSON (a
// string or json.RawMessage is used as is). Unmarshallable args become the
// JSON string of their error, which a tool will reject.
func ToolCall(name string, args any) schemas.ToolCall {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case string:
		raw = json.RawMessage(a)
	case json.RawMessage:
		raw = a
	default:
		data, err := json.Marshal(a)
		if err != nil {
			data, _ = json.Marshal("fake: unmarshallable tool arguments: " + err.Error())
		}
		raw = data
	}
	return schemas.ToolCall{Name: name, Arguments: raw}
}

// Error is a reply that fails the call with err.
func Error(err error) Reply {
	if err == nil {
		err = errors.New("fake: scripted error")
	}
	return Reply{err: err, desc: "error"}
}

// Respond is a reply returning resp as scripted (content, parts, tool
// calls, grounding, usage, …).
func Respond(resp llm.Response) Reply {
	resp.ToolCalls = slices.Clone(resp.ToolCalls)
	resp.Parts = slices.Clone(resp.Parts)
	return Reply{resp: resp, desc: "response"}
}

// WithUsage sets the usage the reply reports.
func (r Reply) WithUsage(u llm.Usage) Reply { r.resp.Usage = u; return r }

// WithTokens sets the usage to prompt and completion tokens (and their sum).
func (r Reply) WithTokens(prompt, completion int) Reply {
	return r.WithUsage(llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion})
}

// WithGrounding sets search grounding metadata.
func (r Reply) WithGrounding(g *llm.Grounding) Reply { r.resp.Grounding = g; return r }

// WithReasoning sets thinking text, streamed before the content.
func (r Reply) WithReasoning(s string) Reply { r.resp.Reasoning = s; return r }

// WithFinish sets the finish reason.
func (r Reply) WithFinish(f llm.FinishReason) Reply { r.resp.FinishReason = f; return r }

// WithModel sets the model name the reply reports (default "fake").
func (r Reply) WithModel(name string) Reply { r.resp.Model = name; return r }

// After delays the reply by d. The delay honours the call's context: a
// cancelled or expired context ends the call early with ctx.Err().
func (r Reply) After(d time.Duration) Reply { r.delay = d; return r }

// Block makes the call wait until its context is done and return ctx.Err():
// a model that never answers, for timeout and cancellation tests.
func (r Reply) Block() Reply { r.block = true; return r }

// When makes the reply answer only calls that m matches. A call takes the
// first reply in the script that matches it, so concurrent calls (a graph's
// fan-out) can be answered by content rather than by arrival order.
func (r Reply) When(m Matcher) Reply { r.match = m; return r }

// Chunks sets how many characters each streamed delta carries.
func (r Reply) Chunks(n int) Reply { r.chunk = n; return r }

// Repeat keeps the reply in the script after use, so it answers every call
// it matches (a default answer). Replies after it that it also matches are
// never reached.
func (r Reply) Repeat() Reply { r.repeat = true; return r }

// Model is a scripted llm.Model for tests. Each call takes the first
// remaining reply that matches it (replies without When match everything),
// records the call, waits for any delay, streams the content through the
// request's OnDelta in chunks when one is set, and returns the reply. When
// no reply is left for a call it fails with an error matching ErrExhausted.
//
// It is safe for concurrent use; the zero value is a model with an empty
// script.
type Model struct {
	mu       sync.Mutex
	script   []Reply
	scripted int // replies ever added
	calls    []Call
	strict   bool
}

// Strict makes the model refuse, as OpenAI does with a 400, a request that
// breaks the request rules of chat APIs with tool calling (see
// CheckToolMessages): the call fails with an error matching
// llm.ErrBadRequest, is recorded, and uses no reply. It returns m.
func (m *Model) Strict() *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.strict = true
	return m
}

// MaxTools is how many tools a Strict model accepts in one request
// (OpenAI's limit).
const MaxTools = 128

// CheckToolMessages checks msgs and req against the rules OpenAI enforces
// with a 400: every assistant message with tool calls is followed by one
// tool message per call (before any other message), every tool message
// answers a call of the assistant message before it, and a request offers
// at most MaxTools tools. The error names the first rule broken.
func CheckToolMessages(msgs []schemas.Message, req llm.Request) error {
	if n := len(req.Tools); n > MaxTools {
		return fmt.Errorf("%w: the request offers %d tools; at most %d are accepted", llm.ErrBadRequest, n, MaxTools)
	}
	open := map[string]bool{}
	for i, msg := range msgs {
		if msg.Role == schemas.Tool {
			if !open[msg.ToolCallID] {
				return fmt.Errorf("%w: message %d: a tool message must answer a tool call of the assistant message before it (tool_call_id %q)", llm.ErrBadRequest, i, msg.ToolCallID)
			}
			delete(open, msg.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("%w: message %d: an assistant message with tool_calls must be followed by tool messages responding to each tool_call_id; unanswered: %s", llm.ErrBadRequest, i, strings.Join(slices.Sorted(maps.Keys(open)), ", "))
		}
		for _, tc := range msg.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("%w: an assistant message with tool_calls must be followed by tool messages responding to each tool_call_id; unanswered: %s", llm.ErrBadRequest, strings.Join(slices.Sorted(maps.Keys(open)), ", "))
	}
	return nil
}

// New returns a Model scripted with replies, in order.
func New(replies ...Reply) *Model {
	return &Model{script: slices.Clone(replies), scripted: len(replies)}
}

// Add appends replies to the script.
func (m *Model) Add(replies ...Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, replies...)
	m.scripted += len(replies)
}

// Calls returns the calls received so far, in arrival order.
func (m *Model) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// Remaining is the number of scripted replies not used yet (repeating
// replies count once).
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.script)
}

// Generate implements llm.Model.
func (m *Model) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	req := llm.NewRequest(opts...)
	reply, call, err := m.take(ctx, msgs, req)
	if err != nil {
		return nil, err
	}
	if reply.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if reply.delay > 0 {
		t := time.NewTimer(reply.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if reply.err != nil {
		return nil, reply.err
	}
	resp := reply.resp
	resp.Parts = slices.Clone(resp.Parts)
	resp.ToolCalls = slices.Clone(resp.ToolCalls)
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].ID == "" {
			resp.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", call.Index, i)
		}
	}
	if resp.Model == "" {
		resp.Model = "fake"
	}
	if req.OnDelta != nil {
		chunk := reply.chunk
		if chunk <= 0 {
			chunk = DefaultChunk
		}
		for _, piece := range chunks(resp.Reasoning, chunk) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			req.OnDelta(llm.Delta{Reasoning: piece})
		}
		for _, piece := range chunks(resp.Content, chunk) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			req.OnDelta(llm.Delta{Content: piece})
		}
	}
	return &resp, nil
}

// take records the call and removes the first reply matching it. A call
// whose context is already done is recorded but uses no reply.
func (m *Model) take(ctx context.Context, msgs []schemas.Message, req llm.Request) (Reply, Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	call := Call{Index: len(m.calls), Messages: cloneMessages(msgs), Request: req}
	m.calls = append(m.calls, call)
	if err := ctx.Err(); err != nil {
		return Reply{}, call, err
	}
	if m.strict {
		if err := CheckToolMessages(msgs, req); err != nil {
			return Reply{}, call, err
		}
	}
	for i, r := range m.script {
		if r.match != nil && !r.match(call) {
			continue
		}
		if !r.repeat {
			m.script = slices.Delete(m.script, i, i+1)
		}
		return r, call, nil
	}
	if len(m.script) == 0 {
		return Reply{}, call, fmt.Errorf("%w: call %d (%s) arrived, but only %s scripted and all were used; add replies with fake.New or Model.Add",
			ErrExhausted, call.Index+1, describe(call), plural(m.scripted, "reply was", "replies were"))
	}
	return Reply{}, call, fmt.Errorf("%w: call %d (%s) matches none of the %s left (%s) of %d scripted",
		ErrExhausted, call.Index+1, describe(call), plural(len(m.script), "reply", "replies"), describeScript(m.script), m.scripted)
}

// describe summarises a call for error messages.
func describe(c Call) string {
	var parts []string
	if c.Request.SchemaName != "" {
		parts = append(parts, "schema "+c.Request.SchemaName)
	}
	if n := len(c.Request.Tools); n > 0 {
		parts = append(parts, fmt.Sprintf("%d tool(s)", n))
	}
	last := c.LastMessage()
	text := last.Content
	if utf8.RuneCountInString(text) > 60 {
		text = string([]rune(text)[:60]) + "…"
	}
	parts = append(parts, fmt.Sprintf("last message %s: %q", orDefault(string(last.Role), "none"), text))
	return strings.Join(parts, ", ")
}

func describeScript(script []Reply) string {
	var parts []string
	for _, r := range script {
		d := r.desc
		if r.match != nil {
			d += " with a matcher"
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cloneMessages(msgs []schemas.Message) []schemas.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
		out[i].Images = slices.Clone(out[i].Images)
	}
	return out
}

// chunks splits s into pieces of at most n runes.
func chunks(s string, n int) []string {
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
