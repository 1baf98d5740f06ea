package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/schemas"
)

// DefaultReasks is how many times Structured asks again after an unusable
// reply, unless the Reasks option says otherwise.
const DefaultReasks = 1

// Reasks sets how many times Structured asks the model again after a reply
// that does not parse or does not match the schema (0: never). Each re-ask
// is one more model call. Providers ignore it.
func Reasks(n int) Option { return func(r *Request) { r.Reasks = &n } }

// ErrInvalidReply matches every *StructuredError: the model answered, but no
// reply (re-asks included) was a JSON document matching the schema.
var ErrInvalidReply = errors.New("the model's reply does not match the requested schema")

// StructuredError is Structured's failure when the model answered but did
// not produce a usable document. It matches ErrInvalidReply, and its cause
// (Err) says what was wrong with the last reply: ErrNoJSON when none was
// found, else the schema validation or decoding error.
//
// Replies holds the raw replies for logging and debugging; they are model
// output and untrusted. Error() carries no more of them than the short
// excerpt a syntax or validation message quotes, and is bounded in length.
type StructuredError struct {
	Schema  string       // the schema's name: the Go type's name, e.g. "Reflection"
	Replies []string     // every reply, in order (len = 1 + re-asks made)
	Finish  FinishReason // why the last reply ended, as the provider said
	Err     error        // what was wrong with the last reply
}

func (e *StructuredError) Error() string {
	n := len(e.Replies)
	attempts := "1 reply"
	if n != 1 {
		attempts = fmt.Sprintf("%d replies", n)
	}
	msg := fmt.Sprintf("llm: no usable %s from the model after %s: %s", e.Schema, attempts, truncate(fmt.Sprint(e.Err), maxErrorCause))
	if e.Finish == FinishLength {
		msg += " (the last reply was cut off at the token limit: raise MaxTokens or ask for less)"
	}
	return msg
}

func (e *StructuredError) Unwrap() error { return e.Err }

// Is makes every StructuredError match ErrInvalidReply.
func (e *StructuredError) Is(target error) bool { return target == ErrInvalidReply }

// Structured asks model for a reply that is a T and returns it decoded.
//
// The JSON Schema is derived from T with jsonschema.For: properties are the
// JSON names of T's fields, descriptions come from `jsonschema:"…"` tags,
// fields without omitempty/omitzero are required, and other keys are not
// allowed. It is sent as Request.Schema with SchemaName set to T's Go name
// ("SearchQueryList"), so providers use their native structured-output mode;
// providers without one fall back to instructions (SchemaInstructions). Any
// ResponseSchema among opts is replaced. The schema, its encoding
// (SchemaJSON) and its resolved form are built once per type and shared
// by every call.
//
// The reply is read leniently (see ExtractJSON: code fences, prose,
// <think> blocks, trailing commas, …) and then must validate against the
// schema, except that keys the schema does not know are ignored rather than
// rejected: models outside a native schema mode often add one ("reasoning"),
// asking again would cost a call, and a misspelt required key still fails
// because the required one is missing. If a provider answers with a tool
// call instead of text, the call's arguments are read (named after the
// schema, else the first).
//
// When the reply is unusable, Structured asks again — DefaultReasks times
// unless the Reasks option says otherwise — appending the reply and a user
// message quoting the problem to the conversation. Its final failure is a
// *StructuredError (matching ErrInvalidReply). Errors from the model itself
// (APIError, cancellation) are returned unchanged, so errors.Is(err,
// ErrRateLimited) and the like keep working.
func Structured[T any](ctx context.Context, model Model, msgs []schemas.Message, opts ...Option) (T, error) {
	var zero T
	name := schemaName(reflect.TypeFor[T]())
	if model == nil {
		return zero, fmt.Errorf("llm: structured %s: %w", name, ErrNoModel)
	}
	sc := structuredSchemaFor[T]()
	if sc.err != nil {
		return zero, fmt.Errorf("llm: structured %s: %w", name, sc.err)
	}
	schema, resolved, prefer := sc.schema, sc.resolved, sc.prefer

	req := NewRequest(opts...)
	reasks := DefaultReasks
	if req.Reasks != nil {
		reasks = max(*req.Reasks, 0)
	}
	callOpts := append(slices.Clip(opts), ResponseSchema(name, schema))

	conv := slices.Clip(msgs)
	var replies []string
	for attempt := 0; ; attempt++ {
		resp, err := model.Generate(ctx, conv, callOpts...)
		if err != nil {
			return zero, err
		}
		if resp == nil {
			resp = &Response{}
		}
		text := replyText(resp, name)
		replies = append(replies, text)
		v, cause := decodeStructured[T](text, resolved, prefer)
		if cause == nil {
			return v, nil
		}
		if resp.FinishReason == FinishContentFilter {
			cause = fmt.Errorf("the provider's content filter blocked the reply: %w", cause)
		}
		if attempt >= reasks {
			return zero, &StructuredError{Schema: name, Replies: replies, Finish: resp.FinishReason, Err: cause}
		}
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		conv = append(conv, schemas.AssistantMessage(text), schemas.UserMessage(reaskPrompt(name, cause, resp.FinishReason)))
	}
}

// structuredSchema is what Structured derives from a Go type: the schema
// sent to the provider, the relaxed schema replies are validated against,
// and which JSON value to look for first.
type structuredSchema struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	prefer   byte
	err      error
}

// structuredSchemas caches structuredSchema per Go type (reflect.Type →
// *structuredSchema): deriving, cloning and resolving a schema was a good
// part of a structured call's CPU and allocations, and the result depends
// on the type alone. Entries are never modified once stored, so the cached
// schema is shared by concurrent calls (Request.Schema is read-only for
// models). Its size is bounded by the number of types the program asks for.
var structuredSchemas sync.Map

// structuredSchemaFor returns T's cached structuredSchema, deriving it on
// first use.
func structuredSchemaFor[T any]() *structuredSchema {
	t := reflect.TypeFor[T]()
	if v, ok := structuredSchemas.Load(t); ok {
		return v.(*structuredSchema)
	}
	v, _ := structuredSchemas.LoadOrStore(t, deriveStructuredSchema[T]())
	return v.(*structuredSchema)
}

func deriveStructuredSchema[T any]() *structuredSchema {
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		return &structuredSchema{err: fmt.Errorf("cannot derive a JSON Schema from the Go type (use plain structs, slices, maps with string keys and basic types): %w", err)}
	}
	resolved, err := relaxAdditional(schema.CloneSchemas()).Resolve(nil)
	if err != nil {
		return &structuredSchema{err: fmt.Errorf("the derived JSON Schema does not resolve: %w", err)}
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return &structuredSchema{err: fmt.Errorf("the derived JSON Schema does not encode: %w", err)}
	}
	schemaJSON.Store(schema, json.RawMessage(slices.Clip(data)))
	return &structuredSchema{schema: schema, resolved: resolved, prefer: schemaKind(schema)}
}

// schemaJSON holds the encoding of each schema Structured derived and
// cached (*jsonschema.Schema → json.RawMessage); like structuredSchemas,
// it grows only with the number of types asked for.
var schemaJSON sync.Map

// SchemaJSON is s encoded as JSON, as json.Marshal would encode it. The
// schemas Structured sends are encoded once per Go type and the same bytes
// returned on every call, so providers encoding Request.Schema on each
// request should use it; the result must not be modified.
func SchemaJSON(s *jsonschema.Schema) (json.RawMessage, error) {
	if v, ok := schemaJSON.Load(s); ok {
		return v.(json.RawMessage), nil
	}
	return json.Marshal(s)
}

// decodeStructured finds the first JSON candidate in text that validates and
// decodes into T. The error describes the most likely candidate's problem.
func decodeStructured[T any](text string, resolved *jsonschema.Resolved, prefer byte) (T, error) {
	var zero T
	cands, err := jsonCandidates(text, prefer)
	if err != nil {
		return zero, err
	}
	var first error
	for _, c := range cands {
		var generic any
		if err := json.Unmarshal(c, &generic); err != nil {
			first = cmp(first, fmt.Errorf("the JSON does not decode: %w", err))
			continue
		}
		if err := resolved.Validate(generic); err != nil {
			first = cmp(first, fmt.Errorf("the JSON does not match the schema: %w", err))
			continue
		}
		var v T
		if err := json.Unmarshal(c, &v); err != nil {
			first = cmp(first, fmt.Errorf("the JSON does not fit the expected types: %w", err))
			continue
		}
		return v, nil
	}
	return zero, first
}

// cmp returns the first non-nil error.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// replyText is the text Structured reads: the content, or when there is none
// the arguments of a tool call (providers that implement structured output as
// a forced function call).
func replyText(resp *Response, name string) string {
	if strings.TrimSpace(resp.Content) != "" || len(resp.ToolCalls) == 0 {
		return resp.Content
	}
	for _, c := range resp.ToolCalls {
		if c.Name == name {
			return string(c.Arguments)
		}
	}
	return string(resp.ToolCalls[0].Arguments)
}

// Bounds on how much of a parse or validation error is quoted: back to the
// model in a re-ask, and in StructuredError's message.
const (
	maxQuotedProblem = 1500
	maxErrorCause    = 400
)

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// reaskPrompt is the user message that asks again after an unusable reply.
func reaskPrompt(name string, cause error, finish FinishReason) string {
	problem := truncate(cause.Error(), maxQuotedProblem)
	var b strings.Builder
	if finish == FinishLength {
		b.WriteString("Your previous reply was cut off at the length limit, so it is incomplete. ")
	}
	fmt.Fprintf(&b, "Your previous reply could not be used as %s: %s\n\n", name, problem)
	fmt.Fprintf(&b, "Reply again with only one JSON object for %s that matches the required schema: every required key present, the right types, no prose and no code fences.", name)
	if finish == FinishLength {
		b.WriteString(" Keep it shorter.")
	}
	return b.String()
}

// schemaName is the name Structured gives T's schema: the Go type's name,
// reduced to what provider APIs accept ([A-Za-z0-9_-], at most 64), or
// "response" for unnamed types.
func schemaName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '[' || r == ',' || r == '.' || r == ' ':
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := strings.Trim(b.String(), "_")
	if name == "" {
		return "response"
	}
	return name
}

// schemaKind says which JSON value Structured looks for first: '{' for an
// object schema, '[' for an array, 0 for scalars.
func schemaKind(s *jsonschema.Schema) byte {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 || slices.Contains(types, "object") {
		return '{'
	}
	if slices.Contains(types, "array") {
		return '['
	}
	return 0
}

// relaxAdditional turns "additionalProperties": false into "anything goes"
// throughout s (a copy), so that validation ignores unknown keys.
func relaxAdditional(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if isFalseSchema(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	} else {
		relaxAdditional(s.AdditionalProperties)
	}
	for _, c := range s.Properties {
		relaxAdditional(c)
	}
	for _, c := range s.PatternProperties {
		relaxAdditional(c)
	}
	for _, c := range s.Defs {
		relaxAdditional(c)
	}
	for _, c := range s.Definitions {
		relaxAdditional(c)
	}
	relaxAdditional(s.Items)
	for _, list := range [][]*jsonschema.Schema{s.ItemsArray, s.PrefixItems, s.AllOf, s.AnyOf, s.OneOf} {
		for _, c := range list {
			relaxAdditional(c)
		}
	}
	return s
}

// isFalseSchema reports whether s is the schema that matches nothing
// ({"not": {}}, written false).
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil {
		return false
	}
	data, err := json.Marshal(s)
	return err == nil && string(data) == "false"
}
