package langchaingo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/tools"
)

// LangchainTool is langchaingo's tools.Tool, by its method set: any
// langchaingo tool satisfies it, and this package does not compile
// langchaingo's tools package (whose calculator brings in Starlark).
type LangchainTool interface {
	Name() string
	Description() string
	Call(ctx context.Context, input string) (string, error)
}

// Tool adapts a langchaingo tool. langchaingo tools take one string, so the
// deepgraph tool takes {"input": "…"}. The tool's error becomes a failed
// Result the model sees; the caller's cancellation is returned as an error.
// The name must be a valid deepgraph tool name (tools.CheckName).
func Tool(t LangchainTool) (tools.Tool, error) {
	if err := tools.CheckName(t.Name()); err != nil {
		return nil, fmt.Errorf("langchaingo tool: %w", err)
	}
	return lcTool{t: t}, nil
}

type lcTool struct{ t LangchainTool }

func (a lcTool) Name() string        { return a.t.Name() }
func (a lcTool) Description() string { return a.t.Description() }

func (a lcTool) Parameters() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{"input": {Type: "string", Description: "The tool's input."}},
		Required:             []string{"input"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func (a lcTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var in struct {
		Input *string `json:"input"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Input == nil {
		return tools.Result{Error: fmt.Sprintf("invalid arguments for %s: %v", a.t.Name(), errNoInput)}, nil
	}
	out, err := a.t.Call(ctx, *in.Input)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{Output: out}, ctx.Err()
		}
		return tools.Result{Output: out, Error: err.Error()}, nil
	}
	return tools.Result{Output: out}, nil
}
