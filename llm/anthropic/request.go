package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// prepared is a call ready to send.
type prepared struct {
	params        anthropic.MessageNewParams
	names         llm.ToolNames // the request's tool names on the wire
	schemaTool    string        // the structured-output tool, if any
	schemaWrapped bool          // its input is {"value": reply}
}

// prepare converts a neutral call into the SDK's request parameters.
func (m *Model) prepare(msgs []schemas.Message, req llm.Request) (prepared, error) {
	var p prepared
	if len(msgs) == 0 {
		return p, fmt.Errorf("%s: %w: no messages to send", m.provider, llm.ErrBadRequest)
	}
	// Tool names may hold a '.', which the API rejects: they travel as
	// wire names, and the reply's tool calls are named back.
	wire, err := llm.NewToolNames(req.Tools)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.names = wire
	system, turns, stable, err := toMessages(msgs, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	maxTokens := m.maxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	p.params = anthropic.MessageNewParams{Model: anthropic.Model(m.model), MaxTokens: int64(maxTokens), Messages: turns}

	defs, names, err := sdkwire.Tools(req.Tools, wire)
	if err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	var tools []anthropic.ToolUnionParam
	taken := make(map[string]bool, len(defs))
	for _, d := range defs {
		taken[d.Name] = true
		schema, err := json.Marshal(d.Parameters)
		if err != nil {
			return p, fmt.Errorf("%s: %w: tool %q: %w", m.provider, llm.ErrBadRequest, d.Name, err)
		}
		tools = append(tools, tool(d.Name, d.Description, schema))
	}
	if req.Schema != nil {
		t, wrapped, err := schemaTool(req.SchemaName, req.Schema, taken)
		if err != nil {
			return p, fmt.Errorf("%s: %w", m.provider, err)
		}
		tools = append(tools, t)
		p.schemaTool = t.OfTool.Name
		p.schemaWrapped = wrapped
	}
	if p.params.ToolChoice, err = toolChoice(req.ToolChoice, names, wire, p.schemaTool); err != nil {
		return p, fmt.Errorf("%s: %w: %w", m.provider, llm.ErrBadRequest, err)
	}
	p.params.Tools = tools
	if len(req.Stop) > 0 {
		p.params.StopSequences = req.Stop
	}
	extra := map[string]any{}
	if req.Temperature != nil {
		// The SDK's v2 types (API version 2026-10-21) no longer carry
		// temperature; API version 2023-06-01 (APIVersion) takes it.
		extra["temperature"] = *req.Temperature
	}
	switch {
	case system == "":
	case req.CachePrompt:
		// A block, to carry a cache breakpoint.
		p.params.System = []anthropic.TextBlockParam{{Text: system, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	default:
		extra["system"] = system
	}
	if len(extra) > 0 {
		p.params.SetExtraFields(extra)
	}
	if req.CachePrompt {
		markCachePrefix(&p.params, stable)
	}
	return p, nil
}

// markCachePrefix places cache breakpoints (cache_control) on the stable
// prefix of a call marked llm.CachePrompt: the last tool (the tools come
// first in the prompt), the end of the turn before the newest one, and the
// end of the newest turn — so the next call of the series, which resends all
// of this and adds its own turns, reads everything up to there from the
// cache (Anthropic looks back from each breakpoint for the longest prefix it
// has cached). A turn ends, for this, at its last block that is not
// transient (stable[i] blocks of turn i are; see toMessages): a prefix that
// ends in a block shown for one call only is never resent. The system prompt
// carries the fourth breakpoint (prepare); Anthropic allows four.
func markCachePrefix(params *anthropic.MessageNewParams, stable []int) {
	mark := func(cc *anthropic.CacheControlEphemeralParam) {
		if cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	if n := len(params.Tools); n > 0 {
		mark(params.Tools[n-1].GetCacheControl())
	}
	marked := 0
	for i := len(params.Messages) - 1; i >= 0 && marked < 2; i-- {
		if stable[i] == 0 {
			continue
		}
		mark(blocksOf(params.Messages[i])[stable[i]-1].GetCacheControl())
		marked++
	}
}

// blocksOf is a turn's content blocks.
func blocksOf(turn anthropic.MessageParam) []anthropic.ContentBlockParamUnion {
	switch {
	case turn.OfUser != nil:
		return turn.OfUser.Content
	case turn.OfAssistant != nil:
		return turn.OfAssistant.Content
	}
	return nil
}

// tool is a tool definition with its input schema sent as it is.
func tool(name, description string, schema json.RawMessage) anthropic.ToolUnionParam {
	t := anthropic.ToolParam{Name: name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema)}
	if description != "" {
		t.Description = param.NewOpt(description)
	}
	return anthropic.ToolUnionParam{OfTool: &t}
}

// toMessages converts the conversation, naming tools by their wire names.
// System messages, wherever they are, become the system prompt. Consecutive
// messages of one role form one turn (tool results and the user's next
// words share the user turn that follows the calls). Images attached to tool
// results follow the results in that turn. Tool input is sent as the exact
// JSON of the call's arguments. stable[i] counts the blocks of turn i up to
// and including its last one from a message that is not Transient.
func toMessages(msgs []schemas.Message, wire llm.ToolNames) (system string, turns []anthropic.MessageParam, stable []int, err error) {
	var systems []string
	transient := false // the message being added is
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		n := len(turns)
		switch {
		case n > 0 && user && turns[n-1].OfUser != nil:
			turns[n-1].OfUser.Content = append(turns[n-1].OfUser.Content, blocks...)
		case n > 0 && !user && turns[n-1].OfAssistant != nil:
			turns[n-1].OfAssistant.Content = append(turns[n-1].OfAssistant.Content, blocks...)
		default:
			if user {
				turns = append(turns, anthropic.NewUserMessage(blocks...))
			} else {
				turns = append(turns, anthropic.NewAssistantMessage(blocks...))
			}
			stable = append(stable, 0)
		}
		if !transient {
			stable[len(turns)-1] = len(blocksOf(turns[len(turns)-1]))
		}
	}
	var pending []anthropic.ContentBlockParamUnion // images from tool results
	flush := func() {
		if len(pending) > 0 {
			add(true, append([]anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("Images returned by the tool calls above:")}, pending...)...)
			pending = nil
		}
	}
	for i, msg := range msgs {
		if msg.Role != schemas.Tool {
			flush()
		}
		transient = msg.Transient
		switch msg.Role {
		case schemas.System:
			if s := strings.TrimSpace(msg.Content); s != "" {
				systems = append(systems, msg.Content)
			}
		case schemas.User:
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(msg.Content) != "" || len(msg.Images) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Content))
			}
			add(true, append(blocks, imageBlocks(msg.Images)...)...)
		case schemas.Assistant:
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(msg.Content) != "" || len(msg.ToolCalls) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return "", nil, nil, fmt.Errorf("message %d: a tool call needs an ID and a name", i)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, objectArguments(tc.Arguments), wire.Wire(tc.Name)))
			}
			add(false, blocks...)
		case schemas.Tool:
			if msg.ToolCallID == "" {
				return "", nil, nil, fmt.Errorf("message %d: a tool result needs the ToolCallID of the call it answers", i)
			}
			result := anthropic.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			// The API takes a tool result's content as text or as blocks;
			// text is what it is.
			result.SetExtraFields(map[string]any{"content": msg.Content})
			add(true, anthropic.ContentBlockParamUnion{OfToolResult: &result})
			pending = append(pending, imageBlocks(msg.Images)...)
		default:
			return "", nil, nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	flush()
	if len(turns) == 0 {
		return "", nil, nil, fmt.Errorf("the conversation has only system messages; add a user message")
	}
	return strings.Join(systems, "\n\n"), turns, stable, nil
}

func imageBlocks(images []schemas.Image) []anthropic.ContentBlockParamUnion {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(images))
	for _, img := range images {
		blocks = append(blocks, anthropic.NewImageBlockBase64(img.MIMEType, base64.StdEncoding.EncodeToString(img.Data)))
	}
	return blocks
}

// objectArguments is a call's arguments as Anthropic wants them back: a JSON
// object, sent byte for byte. Anything else (empty, or malformed text a
// model once produced) is sent as {}.
func objectArguments(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	return json.RawMessage("{}")
}

// schemaTool is the tool whose forced call carries a structured reply. Its
// name is the schema's name made valid (and distinct from the offered
// tools' wire names, taken). Anthropic wants an object as tool input, so a
// schema whose root is not an object is wrapped as {"value": schema}; wrapped
// says so.
func schemaTool(name string, s *jsonschema.Schema, taken map[string]bool) (anthropic.ToolUnionParam, bool, error) {
	toolName := llm.APIName(name)
	for taken[toolName] {
		toolName = strings.TrimSuffix(toolName[:min(len(toolName), 56)], "_") + "_answer"
	}
	schema, err := llm.SchemaJSON(s)
	if err != nil {
		return anthropic.ToolUnionParam{}, false, fmt.Errorf("encoding the response schema: %w", err)
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
	return tool(toolName, "Give your final answer by calling this tool; its input is the answer, "+
		"a JSON document matching the input schema.", schema), wrapped, nil
}

func isObjectSchema(s *jsonschema.Schema) bool {
	if s.Type == "object" {
		return true
	}
	return len(s.Types) == 1 && s.Types[0] == "object"
}

// toolChoice maps the neutral choice to Anthropic's tool_choice
// ({"type":"auto"|"any"|"none"} or {"type":"tool","name":…}); the zero value
// leaves it out. With a response schema the model must call a tool: the
// schema tool when no other tool is offered (or ToolNone), any tool
// otherwise, or the one the choice names (by its wire name).
func toolChoice(c llm.ToolChoice, names map[string]bool, wire llm.ToolNames, schemaTool string) (anthropic.ToolChoiceUnionParam, error) {
	var none anthropic.ToolChoiceUnionParam
	forced := func(name string) anthropic.ToolChoiceUnionParam {
		return anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: name}}
	}
	anyTool := anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	if schemaTool != "" {
		switch c {
		case "", llm.ToolAuto, llm.ToolRequired:
			if len(names) == 0 {
				return forced(schemaTool), nil
			}
			return anyTool, nil
		case llm.ToolNone:
			return forced(schemaTool), nil
		}
	}
	switch c {
	case "":
		return none, nil
	case llm.ToolAuto:
		if len(names) == 0 {
			return none, nil
		}
		return anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}, nil
	case llm.ToolNone:
		if len(names) == 0 {
			return none, nil
		}
		return anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}, nil
	case llm.ToolRequired:
		if len(names) == 0 {
			return none, fmt.Errorf("tool choice %q needs tools", c)
		}
		return anyTool, nil
	}
	if !names[string(c)] {
		return none, fmt.Errorf("tool choice names %q, which is not among the offered tools", c)
	}
	return forced(wire.Wire(string(c))), nil
}
