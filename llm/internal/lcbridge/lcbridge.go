package lcbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

// emptyObject is the parameters schema of a tool that takes no arguments.
var emptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// Tools converts tool definitions to langchaingo's, named by their wire
// names (see llm.ToolNames), with the set of their names (not wire names).
// A tool without parameters takes an empty object. Names must be present
// and unique.
func Tools(defs []schemas.ToolDef, wire llm.ToolNames) ([]llms.Tool, map[string]bool, error) {
	tools := make([]llms.Tool, 0, len(defs)+1) // room for a provider's own tool
	names := make(map[string]bool, len(defs))
	for _, d := range defs {
		if d.Name == "" {
			return nil, nil, fmt.Errorf("a tool needs a name")
		}
		if names[d.Name] {
			return nil, nil, fmt.Errorf("two tools are named %q", d.Name)
		}
		names[d.Name] = true
		var params any = emptyObject
		if d.Parameters != nil {
			params = d.Parameters
		}
		tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: wire.Wire(d.Name), Description: d.Description, Parameters: params,
		}})
	}
	return tools, names, nil
}

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

// IntKey reads a counter from langchaingo's GenerationInfo, whichever
// numeric type it has; 0 when absent.
func IntKey(info map[string]any, key string) int {
	switch v := info[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

// CallID returns a random tool-call ID with the provider's prefix ("call_",
// "toolu_"), for calls a server sent without one.
func CallID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Generate runs m.GenerateContent, turning a panic in langchaingo's reply
// handling (it dereferences fields a malformed reply may lack) into an error
// wrapping wiretap.ErrMalformed.
func Generate(ctx context.Context, m llms.Model, msgs []llms.MessageContent, opts ...llms.CallOption) (resp *llms.ContentResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("%w: %v", wiretap.ErrMalformed, r)
		}
	}()
	return m.GenerateContent(ctx, msgs, opts...)
}
