package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// deleter is a tool with side effects: it says so with tools.SideEffects.
type deleter struct{}

func (deleter) Name() string                   { return "delete_file" }
func (deleter) Description() string            { return "Deletes a file." }
func (deleter) Parameters() *jsonschema.Schema { return nil }
func (deleter) Run(context.Context, json.RawMessage) (tools.Result, error) {
	fmt.Println("deleting!")
	return tools.Text("deleted"), nil
}
func (deleter) Effect(json.RawMessage) tools.Effect { return tools.Effect{Effectful: true} }

// With ApproveTools, a call with side effects waits for a person: the run
// pauses with a ToolApproval, and Resume with the person's answer goes on —
// here a rejection, which the model is told about; the call never runs.
// Pass the run's CallJournal with WithCallJournal, and a run resumed after
// a crash does not repeat such a call blindly either.
func ExampleAgentConfig_approveTools() {
	model := fake.New(
		fake.ToolCalls(fake.ToolCall("delete_file", map[string]string{"path": "notes.md"})),
		fake.Text("I kept notes.md."),
	)
	col, _ := tools.NewCollection(deleter{})
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col, ApproveTools: true, Checkpointer: graph.NewMemorySaver()})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, err := agent.Run(ctx, "Tidy up", nil, graph.Thread("tidy"))
	if errors.Is(err, graph.ErrInterrupted) && res.Approval != nil {
		fmt.Println("asked about:", res.Approval.Tool, string(res.Approval.Args))
	}
	res, err = agent.Resume(ctx, nil, graph.Thread("tidy"), graph.Answer("reject: keep my notes"))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Answer)
	for _, m := range model.Calls()[1].Messages {
		if m.ToolCallID != "" {
			fmt.Println(m.Content)
		}
	}
	// Output:
	// asked about: delete_file {"path":"notes.md"}
	// I kept notes.md.
	// <tool_output tool="delete_file" untrusted="true">
	// Error: not run: the person who approves this agent's tool calls rejected it: keep my notes
	// </tool_output>
}
