package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// call is one Generate call translated to the API's request body.
type call struct {
	body    *generateRequest
	encoded []byte // body as JSON
	// combined reports that the request combines Google Search, function
	// tools or a native response schema, which some models reject with 400.
	combined bool
}

// validToolName says whether name is what the Gemini API accepts as a
// function name: a letter or underscore, then at most 127 letters, digits,
// underscores, dots, colons and dashes (^[A-Za-z_][A-Za-z0-9_.:\-]{0,127}$).
// It is a loop rather than that regular expression, whose {0,127} bound
// compiled to a large program (about 120 KB and 1,700 allocations) at every
// start of a program importing this package.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// generatedIDPrefix marks tool-call IDs this package made up because the API
// sent none. They are never sent back to the API.
const generatedIDPrefix = "gemini-call-"

// buildCall validates req and translates msgs and req to a request body.
func (m *Model) buildCall(msgs []schemas.Message, req llm.Request) (*call, error) {
	if req.GoogleSearch && len(req.Tools) > 0 {
		return nil, fmt.Errorf("gemini: Google Search grounding together with function tools: %w "+
			"(Gemini 2.x rejects the combination and Gemini 3 requires its server-side tool calls to be sent back "+
			"in later turns, which llm messages cannot carry); make the grounded search call and the tool call separately",
			llm.ErrUnsupported)
	}
	contents, system, err := convertMessages(msgs)
	if err != nil {
		return nil, err
	}
	body := &generateRequest{Contents: contents}
	cfg := &wireGenerationConf{}
	if req.Temperature != nil {
		t := *req.Temperature
		cfg.Temperature = &t
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = min(req.MaxTokens, math.MaxInt32)
	}
	if len(req.Stop) > 0 {
		cfg.StopSequences = append([]string(nil), req.Stop...)
	}
	if m.thinks {
		cfg.ThinkingConfig = &wireThinkingConfig{IncludeThoughts: true}
	}

	decls, err := functionDeclarations(req.Tools)
	if err != nil {
		return nil, err
	}
	if len(decls) > 0 {
		body.Tools = append(body.Tools, &wireTool{FunctionDeclarations: decls})
	}
	if req.GoogleSearch {
		body.Tools = append(body.Tools, &wireTool{GoogleSearch: &struct{}{}})
	}
	fcc, err := functionCallingConfig(req.ToolChoice, req.Tools)
	if err != nil {
		return nil, err
	}
	if fcc != nil {
		body.ToolConfig = &wireToolConfig{FunctionCallingConfig: fcc}
	}

	combined := false
	if req.Schema != nil {
		withTools := len(body.Tools) > 0
		if withTools && !schemaWithToolsNative(m.model) {
			// Gemini 1.x/2.x reject JSON mode next to tools ("controlled
			// generation is not supported with google_search tool", "Tool use
			// with a response mime type: 'application/json' is unsupported"):
			// ask for the JSON in the instructions instead.
			system = append(system, &wirePart{Text: llm.SchemaInstructions(req.SchemaName, req.Schema)})
			m.log.Debug("gemini: response schema sent as instructions: this model rejects JSON mode together with tools",
				"model", m.model, "schema", req.SchemaName)
		} else {
			schema, err := llm.SchemaJSON(req.Schema)
			if err != nil {
				return nil, fmt.Errorf("gemini: encoding the response's JSON Schema: %w: %v", llm.ErrBadRequest, err)
			}
			cfg.ResponseMIMEType = "application/json"
			cfg.ResponseJSONSchema = schema
			combined = withTools
		}
	}
	if len(system) > 0 {
		body.SystemInstruction = &wireContent{Role: roleUser, Parts: system}
	}
	if !reflect.ValueOf(*cfg).IsZero() {
		body.GenerationConfig = cfg
	}
	return &call{body: body, combined: combined}, nil
}

// schemaWithToolsNative reports whether model is known to accept a JSON
// response schema together with tools (Gemini 3 and later). Model names of
// the 1.x and 2.x families do not; unknown names are assumed to be newer.
func schemaWithToolsNative(model string) bool {
	name := model[strings.LastIndex(model, "/")+1:]
	return !strings.HasPrefix(name, "gemini-1") && !strings.HasPrefix(name, "gemini-2")
}

// functionDeclarations translates tool definitions, checking their names.
func functionDeclarations(tools []schemas.ToolDef) ([]*wireFunctionDecl, error) {
	var decls []*wireFunctionDecl
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if !validToolName(t.Name) {
			return nil, fmt.Errorf("gemini: tool name %q is not accepted by Gemini (start with a letter or underscore; "+
				"then letters, digits, '_', '.', ':' or '-'; at most 128 characters): %w", t.Name, llm.ErrBadRequest)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("gemini: tool %q is offered twice: %w", t.Name, llm.ErrBadRequest)
		}
		seen[t.Name] = true
		decls = append(decls, &wireFunctionDecl{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters})
	}
	return decls, nil
}

// functionCallingConfig maps a tool choice; nil means the API default (auto).
func functionCallingConfig(choice llm.ToolChoice, tools []schemas.ToolDef) (*wireFunctionCallingConfig, error) {
	switch choice {
	case "":
		return nil, nil
	case llm.ToolAuto, llm.ToolNone:
		if len(tools) == 0 {
			return nil, nil
		}
		if choice == llm.ToolNone {
			return &wireFunctionCallingConfig{Mode: modeNone}, nil
		}
		return &wireFunctionCallingConfig{Mode: modeAuto}, nil
	case llm.ToolRequired:
		if len(tools) == 0 {
			return nil, fmt.Errorf("gemini: tool choice %q but no tools are offered: %w", choice, llm.ErrBadRequest)
		}
		return &wireFunctionCallingConfig{Mode: modeAny}, nil
	}
	for _, t := range tools {
		if t.Name == string(choice) {
			return &wireFunctionCallingConfig{Mode: modeAny, AllowedFunctionNames: []string{t.Name}}, nil
		}
	}
	return nil, fmt.Errorf("gemini: tool choice %q names no offered tool: %w", choice, llm.ErrBadRequest)
}

// convertMessages maps a conversation to Gemini contents and the system
// instruction's parts. Messages that carry nothing are skipped (the API
// rejects empty contents); consecutive tool results become one content, as
// Gemini expects the answers to parallel calls together, and so do
// consecutive user messages, as one turn.
func convertMessages(msgs []schemas.Message) ([]*wireContent, []*wirePart, error) {
	var (
		contents []*wireContent
		system   []*wirePart
		// callNames maps tool-call IDs seen so far to their tool names, for
		// tool results that do not repeat the name.
		callNames = map[string]string{}
		lastTool  bool // the last content holds tool results
	)
	for i, msg := range msgs {
		switch msg.Role {
		case schemas.System:
			if len(msg.Images) > 0 {
				return nil, nil, fmt.Errorf("gemini: message %d: a system message cannot carry images (attach them to a user message): %w", i, llm.ErrBadRequest)
			}
			if msg.Content != "" {
				system = append(system, &wirePart{Text: msg.Content})
			}
			continue
		case schemas.User:
			parts, err := textAndImages(i, msg)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case len(parts) == 0:
			case len(contents) > 0 && contents[len(contents)-1].Role == roleUser && !lastTool:
				last := contents[len(contents)-1]
				last.Parts = append(last.Parts, parts...)
			default:
				contents = append(contents, &wireContent{Role: roleUser, Parts: parts})
				lastTool = false
			}
		case schemas.Assistant:
			parts, err := textAndImages(i, msg)
			if err != nil {
				return nil, nil, err
			}
			for j, tc := range msg.ToolCalls {
				args, err := callArgs(tc.Arguments)
				if err != nil {
					return nil, nil, fmt.Errorf("gemini: message %d, tool call %d (%s): arguments are not a JSON object: %w", i, j, tc.Name, err)
				}
				if tc.Name == "" {
					return nil, nil, fmt.Errorf("gemini: message %d, tool call %d: the tool name is empty: %w", i, j, llm.ErrBadRequest)
				}
				if tc.ID != "" {
					callNames[tc.ID] = tc.Name
				}
				parts = append(parts, &wirePart{
					FunctionCall:     &wireFunctionCall{ID: apiCallID(tc.ID), Name: tc.Name, Args: args},
					ThoughtSignature: bytes.Clone(tc.Signature),
				})
			}
			if len(parts) > 0 {
				contents = append(contents, &wireContent{Role: roleModel, Parts: parts})
				lastTool = false
			}
		case schemas.Tool:
			name := msg.Name
			if name == "" {
				name = callNames[msg.ToolCallID]
			}
			if name == "" {
				return nil, nil, fmt.Errorf("gemini: message %d: the tool result names no tool and answers no earlier call (set Message.Name): %w", i, llm.ErrBadRequest)
			}
			parts := []*wirePart{{FunctionResponse: &wireFunctionResponse{
				ID:       apiCallID(msg.ToolCallID),
				Name:     name,
				Response: wireFunctionOutput{Output: msg.Content},
			}}}
			images, err := imageParts(i, msg.Images)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, images...)
			if lastTool {
				last := contents[len(contents)-1]
				last.Parts = append(last.Parts, parts...)
			} else {
				contents = append(contents, &wireContent{Role: roleUser, Parts: parts})
				lastTool = true
			}
		default:
			return nil, nil, fmt.Errorf("gemini: message %d has unknown role %q: %w", i, msg.Role, llm.ErrBadRequest)
		}
	}
	if len(contents) == 0 {
		return nil, nil, fmt.Errorf("gemini: nothing to send: the conversation has no user, assistant or tool message with content: %w", llm.ErrBadRequest)
	}
	return contents, system, nil
}

// textAndImages returns a message's text part (if any) and image parts.
func textAndImages(i int, msg schemas.Message) ([]*wirePart, error) {
	var parts []*wirePart
	if msg.Content != "" {
		parts = append(parts, &wirePart{Text: msg.Content})
	}
	images, err := imageParts(i, msg.Images)
	if err != nil {
		return nil, err
	}
	return append(parts, images...), nil
}

func imageParts(i int, images []schemas.Image) ([]*wirePart, error) {
	var parts []*wirePart
	for j, img := range images {
		if img.MIMEType == "" || len(img.Data) == 0 {
			return nil, fmt.Errorf("gemini: message %d, image %d: both a MIME type and data are required: %w", i, j, llm.ErrBadRequest)
		}
		parts = append(parts, &wirePart{InlineData: &wireBlob{MIMEType: img.MIMEType, Data: img.Data}})
	}
	return parts, nil
}

// callArgs checks tool-call arguments for a functionCall part: a JSON
// object, or nothing. An empty object or none is sent as no args.
func callArgs(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &args); err != nil {
		return nil, fmt.Errorf("%w: %v", llm.ErrBadRequest, err)
	}
	if len(args) == 0 {
		return nil, nil
	}
	return trimmed, nil
}

// apiCallID is the call ID to send to the API: IDs this package generated
// are dropped, since the API never issued them.
func apiCallID(id string) string {
	if strings.HasPrefix(id, generatedIDPrefix) {
		return ""
	}
	return id
}
