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

// A planning flow: the planner writes a two-step plan tagged with
// executors, each step runs on its executor, and a summary ends the flow.
func ExampleFlow() {
	planner := fake.New(
		fake.ToolCalls(fake.ToolCall("planning", map[string]any{"command": "create", "title": "Trip",
			"steps": []string{"[weather] Check the weather in Lisbon", "Pack accordingly"}})),
		fake.Text("It is sunny in Lisbon, so light clothes were packed."),
	)
	say := func(what string) nodes.Executor {
		return nodes.ExecutorFunc(func(_ context.Context, t nodes.StepTask) (nodes.StepResult, error) {
			return nodes.StepResult{Output: what}, nil
		})
	}
	flow, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Executors: []nodes.FlowExecutor{
		{Name: "packer", Description: "packs bags", Executor: say("Packed light clothes.")},
		{Name: "weather", Description: "knows the weather", Executor: say("Sunny, 21°C.")},
	}})
	if err != nil {
		panic(err)
	}
	res, err := flow.Run(context.Background(), "Get ready for a trip to Lisbon", func(e nodes.FlowEvent) {
		if e.Kind == nodes.FlowEventStepDone {
			fmt.Printf("step %d [%s] %s: %s\n", e.Step, e.Executor, e.Status, e.Output)
		}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, "—", res.Summary)
	// Output:
	// step 0 [weather] completed: Sunny, 21°C.
	// step 1 [packer] completed: Packed light clothes.
	// completed — It is sunny in Lisbon, so light clothes were packed.
}
