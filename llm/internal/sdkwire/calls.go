package sdkwire

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// ToolCallArguments makes a model's arguments text safe to keep in a
// json.RawMessage: valid JSON stays as is (trimmed), empty becomes {},
// anything else becomes a JSON string holding the text, so the call still
// serialises and the tool sees (and can report) what the model wrote.
func ToolCallArguments(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// CallID returns a random tool-call ID with the provider's prefix ("call_",
// "toolu_"), for calls a server sent without one.
func CallID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Tool is a tool definition as both APIs take it: its wire name, its
// description and its parameters' JSON Schema as a JSON object.
type Tool struct {
	Name        string // the wire name (llm.ToolNames)
	Description string
	Parameters  map[string]any
}

// Tools converts tool definitions, named by their wire names, with the set
// of their names (not wire names). A tool without parameters takes an empty
// object. Names must be present and unique. Numbers in the schemas keep
// their text (json.Number).
func Tools(defs []schemas.ToolDef, wire llm.ToolNames) ([]Tool, map[string]bool, error) {
	tools := make([]Tool, 0, len(defs)+1) // room for a provider's own tool
	names := make(map[string]bool, len(defs))
	for _, d := range defs {
		if d.Name == "" {
			return nil, nil, fmt.Errorf("a tool needs a name")
		}
		if names[d.Name] {
			return nil, nil, fmt.Errorf("two tools are named %q", d.Name)
		}
		names[d.Name] = true
		params := map[string]any{"type": "object", "properties": map[string]any{}}
		if d.Parameters != nil {
			var err error
			if params, err = SchemaObject(d.Parameters); err != nil {
				return nil, nil, fmt.Errorf("tool %q: %w", d.Name, err)
			}
		}
		tools = append(tools, Tool{Name: wire.Wire(d.Name), Description: d.Description, Parameters: params})
	}
	return tools, names, nil
}

// SchemaObject is v (a JSON Schema) as the JSON object the SDKs' parameter
// types hold, numbers kept as json.Number.
func SchemaObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil || out == nil {
		return nil, fmt.Errorf("the schema is not a JSON object")
	}
	return out, nil
}
