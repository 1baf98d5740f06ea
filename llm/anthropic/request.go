package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"

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
	// Tool names may hold a '.', which the API rejects: they travel as
	// wire names, and the reply's tool calls are named back (build).
	wire, err := llm.NewToolNames(req.Tools)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.call.names = wire
	lcMsgs, inputs, err := toMessages(msgs, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.msgs = lcMsgs
	p.call.inputs = inputs

	tools, names, err := lcbridge.Tools(req.Tools, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	if req.Schema != nil {
		taken := make(map[string]bool, len(tools))
		for _, t := range tools {
			taken[t.Function.Name] = true
		}
		tool, wrapped, err := schemaTool(req.SchemaName, req.Schema, taken)
		if err != nil {
			return p, fmt.Errorf("%s: %w", m.provider, err)
		}
		tools = append(tools, tool)
		p.call.schemaTool = tool.Function.Name
		p.call.schemaWrapped = wrapped
	}
	choice, err := toolChoice(req.ToolChoice, names, wire, p.call.schemaTool)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.call.toolChoice = choice
	if len(tools) > 0 {
		p.opts = append(p.opts, llms.WithTools(tools))
	}

	maxTokens := m.maxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	p.opts = append(p.opts, llms.WithMaxTokens(maxTokens))
	if req.Temperature != nil {
		p.opts = append(p.opts, llms.WithTemperature(*req.Temperature))
	} else {
		// langchaingo always sends a temperature (0 when unset); drop it so
		// the API's default applies.
		p.call.dropTemperature = true
	}
	if len(req.Stop) > 0 {
		p.opts = append(p.opts, llms.WithStopWords(req.Stop))
	}
	if req.OnDelta != nil {
		p.call.onDelta = req.OnDelta
		p.call.stream = true
		// Turns streaming on; deltas come from the transport, which also
		// sees tool input and thinking.
		p.opts = append(p.opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	}
	return p, nil
}

// toMessages converts the conversation for langchaingo, naming tools by their
// wire names. langchaingo reads only the first part of an assistant message: each text and tool call becomes its
// own assistant message, and the transport merges consecutive messages of a
// role back into one (as it does the separate tool_result messages). System
// messages, wherever they are, become the top-level system prompt. inputs
// maps tool-call IDs to their exact argument JSON, which the transport puts
// back (langchaingo round-trips it through map[string]any).
func toMessages(msgs []schemas.Message, wire llm.ToolNames) ([]llms.MessageContent, map[string]json.RawMessage, error) {
	var system []string
	out := make([]llms.MessageContent, 0, len(msgs)+2)
	inputs := map[string]json.RawMessage{}
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
			if s := strings.TrimSpace(msg.Content); s != "" {
				system = append(system, msg.Content)
			}
		case schemas.User:
			var parts []llms.ContentPart
			if msg.Content != "" || len(msg.Images) == 0 {
				parts = append(parts, llms.TextPart(msg.Content))
			}
			parts = append(parts, imageParts(msg.Images)...)
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
		case schemas.Assistant:
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				out = append(out, llms.TextParts(llms.ChatMessageTypeAI, msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, nil, fmt.Errorf("message %d: a tool call needs an ID and a name", i)
				}
				args := objectArguments(tc.Arguments)
				inputs[tc.ID] = args
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{
					ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: wire.Wire(tc.Name), Arguments: string(args)},
				}}})
			}
		case schemas.Tool:
			if msg.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: a tool result needs the ToolCallID of the call it answers", i)
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Name: wire.Wire(msg.Name), Content: msg.Content},
			}})
			pending = append(pending, imageParts(msg.Images)...)
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("the conversation has only system messages; add a user message")
	}
	if len(system) > 0 {
		out = append([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, strings.Join(system, "\n\n"))}, out...)
	}
	return out, inputs, nil
}

func imageParts(images []schemas.Image) []llms.ContentPart {
	parts := make([]llms.ContentPart, 0, len(images))
	for _, img := range images {
		parts = append(parts, llms.BinaryPart(img.MIMEType, img.Data))
	}
	return parts
}

// objectArguments is a call's arguments as Anthropic wants them back: a JSON
// object. Anything else (empty, or malformed text a model once produced) is
// sent as {}.
func objectArguments(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	return json.RawMessage("{}")
}

// schemaTool is the tool whose forced call carries a structured reply. Its
// name is the schema's name made valid (and distinct from the offered
// tools' wire names, taken). Anthropic wants an object as tool input, so a schema whose root is
// not an object is wrapped as {"value": schema}; wrapped says so.
func schemaTool(name string, s *jsonschema.Schema, taken map[string]bool) (llms.Tool, bool, error) {
	tool := llm.APIName(name)
	for taken[tool] {
		tool = strings.TrimSuffix(tool[:min(len(tool), 56)], "_") + "_answer"
	}
	schema, err := json.Marshal(s)
	if err != nil {
		return llms.Tool{}, false, fmt.Errorf("encoding the response schema: %w", err)
	}
	wrapped := !isObjectSchema(s)
	if wrapped {
		schema, _ = json.Marshal(map[string]any{
			"type":                 "object",
			"properties":           map[string]json.RawMessage{"value": schema},
			"required":             []string{"value"},
			"additionalProperties": false,
		})
	}
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: tool,
		Description: "Give your final answer by calling this tool; its input is the answer, " +
			"a JSON document matching the input schema.",
		Parameters: json.RawMessage(schema),
	}}, wrapped, nil
}

func isObjectSchema(s *jsonschema.Schema) bool {
	if s.Type == "object" {
		return true
	}
	return len(s.Types) == 1 && s.Types[0] == "object"
}

// toolChoice maps the neutral choice to Anthropic's tool_choice
// ({"type":"auto"|"any"|"none"} or {"type":"tool","name":…}); nil leaves it
// out. With a response schema the model must call a tool: the schema tool
// when no other tool is offered (or ToolNone), any tool otherwise, or the
// one the choice names (by its wire name).
func toolChoice(c llm.ToolChoice, names map[string]bool, wire llm.ToolNames, schemaTool string) (json.RawMessage, error) {
	forced := func(name string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"type": "tool", "name": name})
		return b
	}
	if schemaTool != "" {
		switch c {
		case "", llm.ToolAuto, llm.ToolRequired:
			if len(names) == 0 {
				return forced(schemaTool), nil
			}
			return json.RawMessage(`{"type":"any"}`), nil
		case llm.ToolNone:
			return forced(schemaTool), nil
		}
	}
	switch c {
	case "":
		return nil, nil
	case llm.ToolAuto, llm.ToolNone:
		if len(names) == 0 {
			return nil, nil
		}
		return json.RawMessage(`{"type":"` + string(c) + `"}`), nil
	case llm.ToolRequired:
		if len(names) == 0 {
			return nil, fmt.Errorf("tool choice %q needs tools", c)
		}
		return json.RawMessage(`{"type":"any"}`), nil
	}
	if !names[string(c)] {
		return nil, fmt.Errorf("tool choice names %q, which is not among the offered tools", c)
	}
	return forced(wire.Wire(string(c))), nil
}
