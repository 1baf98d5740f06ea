package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/lcbridge"
	"github.com/deepgraph/deepgraph/schemas"
)

// prepare converts a neutral call into langchaingo's inputs and the body
// edits the transport applies.
func (m *Model) prepare(msgs []schemas.Message, req llm.Request) (prepared, error) {
	var p prepared
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
			p.call.responseFormat = format
		case SchemaJSONObject:
			instructions = llm.SchemaInstructions(req.SchemaName, req.Schema)
			p.opts = append(p.opts, llms.WithJSONMode())
		case SchemaPrompt:
			instructions = llm.SchemaInstructions(req.SchemaName, req.Schema)
		}
	}
	// Tool names may hold a '.', which the API rejects: they travel as
	// wire names, and the reply's tool calls are named back (response).
	wire, err := llm.NewToolNames(req.Tools)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.call.names = wire
	lcMsgs, err := toMessages(msgs, instructions, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.msgs = lcMsgs

	if req.Temperature != nil {
		p.opts = append(p.opts, llms.WithTemperature(*req.Temperature))
	} else {
		// langchaingo always sends a temperature (0 when unset); drop it so
		// the server's default applies.
		p.call.dropTemperature = true
	}
	if req.MaxTokens > 0 {
		p.opts = append(p.opts, llms.WithMaxTokens(req.MaxTokens))
		if m.maxTokens {
			p.opts = append(p.opts, lcopenai.WithLegacyMaxTokensField())
		}
	}
	if len(req.Stop) > 0 {
		p.opts = append(p.opts, llms.WithStopWords(req.Stop))
	}
	if len(req.Tools) > 0 {
		tools, names, err := lcbridge.Tools(req.Tools, wire)
		if err != nil {
			return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
		}
		p.opts = append(p.opts, llms.WithTools(tools))
		p.names = names
	}
	choice, err := toolChoice(req.ToolChoice, p.names, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	if choice != nil {
		p.opts = append(p.opts, llms.WithToolChoice(choice))
	}
	if req.OnDelta != nil {
		p.call.onDelta = req.OnDelta
		p.call.stream = true
		p.call.dropStreamOptions = m.noUsage
		// Turns streaming on. Deltas come from the transport, which sees
		// every field of every chunk; langchaingo's callback would pass
		// tool-call JSON off as content.
		p.opts = append(p.opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	}
	return p, nil
}

// toMessages converts the conversation, naming tools by their wire names.
// Images attached to tool results go into a user message after the run of
// tool messages, since the tool role takes text only and tool results must
// directly follow their call.
func toMessages(msgs []schemas.Message, instructions string, wire llm.ToolNames) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(msgs)+2)
	if instructions != "" {
		if msgs[0].Role == schemas.System {
			first := msgs[0]
			first.Content = strings.TrimRight(first.Content, "\n") + "\n\n" + instructions
			msgs = append([]schemas.Message{first}, msgs[1:]...)
		} else {
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, instructions))
		}
	}
	var pending []llms.ContentPart // images from tool results
	flush := func() {
		if len(pending) > 0 {
			parts := append([]llms.ContentPart{llms.TextPart("Images returned by the tool calls above:")}, pending...)
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
			pending = nil
		}
	}
	for i, msg := range msgs {
		if msg.Role != schemas.Tool {
			flush()
		}
		switch msg.Role {
		case schemas.System:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, msg.Content))
		case schemas.User:
			var parts []llms.ContentPart
			if msg.Content != "" || len(msg.Images) == 0 {
				parts = append(parts, llms.TextPart(msg.Content))
			}
			parts = append(parts, imageParts(msg.Images)...)
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
		case schemas.Assistant:
			var parts []llms.ContentPart
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				parts = append(parts, llms.TextPart(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: a tool call needs an ID and a name", i)
				}
				parts = append(parts, llms.ToolCall{
					ID:           tc.ID,
					Type:         "function",
					FunctionCall: &llms.FunctionCall{Name: wire.Wire(tc.Name), Arguments: argumentsText(tc.Arguments)},
				})
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
		case schemas.Tool:
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool result needs the ToolCallID of the call it answers", i)
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Name: wire.Wire(msg.Name), Content: msg.Content},
			}})
			pending = append(pending, imageParts(msg.Images)...)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	flush()
	return out, nil
}

func imageParts(images []schemas.Image) []llms.ContentPart {
	parts := make([]llms.ContentPart, 0, len(images))
	for _, img := range images {
		parts = append(parts, llms.ImageURLContent{
			URL: "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
		})
	}
	return parts
}

// argumentsText is a call's arguments as the API wants them back: a JSON
// text, "{}" when empty. A JSON string holding non-JSON text (how replies with
// malformed arguments are kept, see lcbridge.ToolCallArguments) is sent back as that
// text.
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
func toolChoice(c llm.ToolChoice, names map[string]bool, wire llm.ToolNames) (any, error) {
	switch c {
	case "":
		return nil, nil
	case llm.ToolAuto, llm.ToolNone:
		if len(names) == 0 {
			return nil, nil
		}
		return string(c), nil
	case llm.ToolRequired:
		if len(names) == 0 {
			return nil, fmt.Errorf("tool choice %q needs tools", c)
		}
		return string(c), nil
	}
	if !names[string(c)] {
		return nil, fmt.Errorf("tool choice names %q, which is not among the offered tools", c)
	}
	return llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: wire.Wire(string(c))}}, nil
}

// responseFormat builds the json_schema response_format with the full schema
// (langchaingo's own schema type drops anyOf, min/max, formats, $defs, …).
func responseFormat(name string, s *jsonschema.Schema) (json.RawMessage, error) {
	schema, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the response schema: %w", err)
	}
	return json.Marshal(struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}{
		Type: "json_schema",
		JSONSchema: struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		}{Name: llm.APIName(name), Strict: StrictCompatible(s), Schema: schema},
	})
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

func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}
