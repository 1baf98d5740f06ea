package nodes_test

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// A run that fails after some steps — here the model refuses the prompt —
// still returns what it had done: status error, and Partial with its tool
// calls and its last reply.
func ExampleAgent_Run_failed() {
	type args struct {
		Path string `json:"path" jsonschema:"The file."`
	}
	read := tools.MustFunc("read", "Reads a file.", func(_ context.Context, a args) (tools.Result, error) {
		return tools.Text("contents of " + a.Path), nil
	})
	col, err := tools.NewCollection(read)
	if err != nil {
		panic(err)
	}
	model := fake.New(
		fake.Respond(llm.Response{Content: "The notes are in notes.md; reading them.",
			ToolCalls: []schemas.ToolCall{fake.ToolCall("read", args{Path: "notes.md"})}}),
		fake.Error(&llm.APIError{Provider: "fake", Status: 400, Message: "the prompt is too long"}),
	)
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), "Summarise my notes", nil)
	fmt.Println(err != nil, res.Status, res.Steps)
	fmt.Println(res.Partial)
	// Output:
	// true error 1
	// The run stopped before the task was done. What it had done by then:
	//
	// Tool calls:
	// - step 1: `read {"path":"notes.md"}`
	//
	// Its last reply: The notes are in notes.md; reading them.
}
