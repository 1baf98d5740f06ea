package openai

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// prepared is a call ready to send.
type prepared struct {
	params openai.ChatCompletionNewParams
	names  llm.ToolNames // the request's tool names on the wire
}

// prepare converts a neutral call into the SDK's request parameters.
func (m *Model) prepare(msgs []schemas.Message, req llm.Request) (prepared, error) {
	p := prepared{params: openai.ChatCompletionNewParams{Model: m.model}}
	if len(msgs) == 0 {
		return p, fmt.Errorf("%s: %w: no messages to send", m.provider, llm.ErrBadRequest)
	}
	var instructions string
	if req.Schema != nil {
		switch m.schemaMode {
		case SchemaNative:
			format, err := responseFormat(req.SchemaName, req.Schema)
			if err != nil {
				return p, fmt.Errorf("%s: %w", m.provider, err)
			}
			p.params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: format}
		case SchemaJSONObject:
			instructions = llm.SchemaInstructions(req.SchemaName, req.Schema)
			p.params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		case SchemaPrompt:
			instructions = llm.SchemaInstructions(req.SchemaName, req.Schema)
		}
	}
	// Tool names may hold a '.', which the API rejects: they travel as
	// wire names, and the reply's tool calls are named back.
	wire, err := llm.NewToolNames(req.Tools)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.names = wire
	if p.params.Messages, err = toMessages(msgs, instructions, wire); err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	if req.Temperature != nil {
		p.params.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if m.maxTokens {
			p.params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			p.params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if len(req.Stop) > 0 {
		p.params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop}
	}
	tools, names, err := sdkwire.Tools(req.Tools, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	for _, t := range tools {
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: t.Parameters}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		p.params.Tools = append(p.params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if p.params.ToolChoice, err = toolChoice(req.ToolChoice, names, wire); err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	if req.OnDelta != nil && !m.noUsage {
		p.params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	}
	if req.CachePrompt && m.cacheKey {
		p.params.PromptCacheKey = param.NewOpt(cacheKey(m.model, msgs, req.Tools))
	}
	return p, nil
}

// cacheKey is the prompt_cache_key of a call marked llm.CachePrompt: a hash
// of what stays the same across a run's calls — the model, the system
// prompts, the tools and the first user turn (the task or question) — so
// that the calls of one run reach the same cache, and other runs do not
// crowd it.
func cacheKey(model string, msgs []schemas.Message, tools []schemas.ToolDef) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", model)
	for _, t := range tools {
		fmt.Fprintf(h, "tool %s\x00", t.Name)
	}
	for _, msg := range msgs {
		if msg.Role == schemas.System {
			fmt.Fprintf(h, "system %s\x00", msg.Content)
		}
	}
	for _, msg := range msgs {
		if msg.Role == schemas.User {
			fmt.Fprintf(h, "user %s\x00", msg.Content)
			break
		}
	}
	return "deepgraph-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// toMessages converts the conversation, naming tools by their wire names.
// Images attached to tool results go into a user message after the run of
// tool messages, since the tool role takes text only and tool results must
// directly follow their call. Consecutive text-only user messages become
// one.
func toMessages(msgs []schemas.Message, instructions string, wire llm.ToolNames) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+2)
	if instructions != "" {
		if msgs[0].Role == schemas.System {
			first := msgs[0]
			first.Content = strings.TrimRight(first.Content, "\n") + "\n\n" + instructions
			msgs = append([]schemas.Message{first}, msgs[1:]...)
		} else {
			out = append(out, openai.SystemMessage(instructions))
		}
	}
	var pending []openai.ChatCompletionContentPartUnionParam // images from tool results
	flush := func() {
		if len(pending) > 0 {
			parts := append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Images returned by the tool calls above:")}, pending...)
			out = append(out, openai.UserMessage(parts))
			pending = nil
		}
	}
	// Consecutive text-only user messages form one message, their texts
	// joined by a blank line, as they form one turn on Anthropic: the chat
	// templates of some models served behind this API (Gemma's, Mistral's)
	// refuse two user messages in a row.
	joinable, text := -1, "" // the text-only user message the next one joins
	for i, msg := range msgs {
		if msg.Role != schemas.Tool {
			flush()
		}
		joins := joinable
		joinable = -1
		switch msg.Role {
		case schemas.System:
			out = append(out, openai.SystemMessage(msg.Content))
		case schemas.User:
			if len(msg.Images) == 0 {
				if joins >= 0 {
					text += "\n\n" + msg.Content
					out[joins] = openai.UserMessage(text)
				} else {
					text = msg.Content
					out = append(out, openai.UserMessage(text))
				}
				joinable = len(out) - 1
				continue
			}
			var parts []openai.ChatCompletionContentPartUnionParam
			if msg.Content != "" {
				parts = append(parts, openai.TextContentPart(msg.Content))
			}
			out = append(out, openai.UserMessage(append(parts, imageParts(msg.Images)...)))
		case schemas.Assistant:
			a := openai.ChatCompletionAssistantMessageParam{Content: openai.ChatCompletionAssistantMessageParamContentUnion{OfString: param.NewOpt(msg.Content)}}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: a tool call needs an ID and a name", i)
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: wire.Wire(tc.Name), Arguments: argumentsText(tc.Arguments)},
				}})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case schemas.Tool:
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool result needs the ToolCallID of the call it answers", i)
			}
			out = append(out, openai.ToolMessage(msg.Content, msg.ToolCallID))
			pending = append(pending, imageParts(msg.Images)...)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	flush()
	return out, nil
}

func imageParts(images []schemas.Image) []openai.ChatCompletionContentPartUnionParam {
	parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(images))
	for _, img := range images {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
			URL: "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
		}))
	}
	return parts
}

// argumentsText is a call's arguments as the API wants them back: a JSON
// text, "{}" when empty. A JSON string holding non-JSON text (how replies with
// malformed arguments are kept, see sdkwire.ToolCallArguments) is sent back as
// that text.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil && !json.Valid([]byte(s)) {
		return s
	}
	return string(raw)
}

// toolChoice maps the neutral choice to OpenAI's tool_choice: a string, or
// {"type":"function","function":{"name":…}} with the tool's wire name.
// Without tools, auto and none are dropped (OpenAI rejects tool_choice
// without tools) and the others fail.
func toolChoice(c llm.ToolChoice, names map[string]bool, wire llm.ToolNames) (openai.ChatCompletionToolChoiceOptionUnionParam, error) {
	var none openai.ChatCompletionToolChoiceOptionUnionParam
	switch c {
	case "":
		return none, nil
	case llm.ToolAuto, llm.ToolNone:
		if len(names) == 0 {
			return none, nil
		}
		return openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(string(c))}, nil
	case llm.ToolRequired:
		if len(names) == 0 {
			return none, fmt.Errorf("tool choice %q needs tools", c)
		}
		return openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(string(c))}, nil
	}
	if !names[string(c)] {
		return none, fmt.Errorf("tool choice names %q, which is not among the offered tools", c)
	}
	return openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: wire.Wire(string(c))}), nil
}

// responseFormat is the json_schema response_format with the full schema,
// byte for byte, strict when the schema allows it.
func responseFormat(name string, s *jsonschema.Schema) (*shared.ResponseFormatJSONSchemaParam, error) {
	schema, err := llm.SchemaJSON(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the response schema: %w", err)
	}
	return &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
		Name:   llm.APIName(name),
		Strict: param.NewOpt(StrictCompatible(s)),
		Schema: json.RawMessage(schema),
	}}, nil
}

// StrictCompatible reports whether s meets OpenAI's strict structured-output
// rules: the root is an object; every object lists all its properties in
// required and has additionalProperties false; every subschema has a type
// (or is a $ref, anyOf, enum or const); and only supported keywords appear.
//
// Schemas inferred from Go structs by jsonschema-go pass unless a field is
// optional (omitempty/omitzero: not required), a map (additionalProperties is
// a schema) or an interface (no type). Such a schema is sent with
// strict:false rather than rewritten, because rewriting (making optional
// fields required and nullable) would change what the reply is validated
// against.
func StrictCompatible(s *jsonschema.Schema) bool {
	if s == nil || !hasType(s, "object") || len(s.AnyOf) > 0 {
		return false
	}
	return strictNode(s, 0)
}

func strictNode(s *jsonschema.Schema, depth int) bool {
	if s == nil {
		return true
	}
	if depth > 64 {
		return false
	}
	if len(s.AllOf) > 0 || len(s.OneOf) > 0 || s.Not != nil || s.If != nil || s.Then != nil || s.Else != nil ||
		len(s.DependentSchemas) > 0 || len(s.DependentRequired) > 0 || len(s.DependencySchemas) > 0 || len(s.DependencyStrings) > 0 ||
		len(s.PatternProperties) > 0 || s.PropertyNames != nil || s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil ||
		s.MinProperties != nil || s.MaxProperties != nil || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil ||
		s.UniqueItems || len(s.PrefixItems) > 0 || len(s.ItemsArray) > 0 || s.AdditionalItems != nil ||
		s.MinLength != nil || s.MaxLength != nil || s.DynamicRef != "" || len(s.Extra) > 0 {
		return false
	}
	if s.Type == "" && len(s.Types) == 0 && s.Ref == "" && len(s.AnyOf) == 0 && s.Enum == nil && s.Const == nil {
		return false
	}
	if hasType(s, "object") {
		if !isFalseSchema(s.AdditionalProperties) {
			return false
		}
		required := make(map[string]bool, len(s.Required))
		for _, r := range s.Required {
			required[r] = true
		}
		for name, p := range s.Properties {
			if !required[name] || !strictNode(p, depth+1) {
				return false
			}
		}
	} else if s.AdditionalProperties != nil || len(s.Properties) > 0 {
		return false
	}
	if !strictNode(s.Items, depth+1) {
		return false
	}
	for _, sub := range s.AnyOf {
		if !strictNode(sub, depth+1) {
			return false
		}
	}
	for _, defs := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions} {
		for _, sub := range defs {
			if !strictNode(sub, depth+1) {
				return false
			}
		}
	}
	return true
}

func hasType(s *jsonschema.Schema, t string) bool {
	if s.Type == t {
		return true
	}
	for _, x := range s.Types {
		if x == t {
			return true
		}
	}
	return false
}

// isFalseSchema reports whether s encodes as false ({"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil {
		return false
	}
	// The form jsonschema.For writes, checked without encoding (this runs
	// for every object of every structured call); anything else is encoded.
	only := *s
	only.Not = nil
	if reflect.ValueOf(&only).Elem().IsZero() && reflect.ValueOf(s.Not).Elem().IsZero() {
		return true
	}
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}
