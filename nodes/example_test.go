package nodes_test

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// An agent with one tool, driven by a scripted model: it calls the tool,
// reads the observation, and terminates with its answer.
func ExampleAgent() {
	type args struct {
		City string `json:"city" jsonschema:"The city."`
	}
	weather := tools.MustFunc("weather", "Current weather in a city.", func(_ context.Context, a args) (tools.Result, error) {
		return tools.Text("Sunny, 21°C in " + a.City), nil
	})
	col, err := tools.NewCollection(weather)
	if err != nil {
		panic(err)
	}
	model := fake.New(
		fake.ToolCalls(fake.ToolCall("weather", args{City: "Lisbon"})),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "It is sunny in Lisbon (21°C)."})),
	)
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), "What's the weather in Lisbon?", func(e nodes.AgentEvent) {
		if e.Kind == nodes.AgentEventAct {
			fmt.Printf("step %d: %s %s → %s\n", e.Step, e.Tool, e.Args, e.Output)
		}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Answer)
	// Output:
	// step 1: weather {"city":"Lisbon"} → Sunny, 21°C in Lisbon
	// step 2: terminate {"answer":"It is sunny in Lisbon (21°C).","status":"success"} → The task is finished (status: success).
	// success It is sunny in Lisbon (21°C).
}
