package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

type weatherArgs struct {
	City  string `json:"city" jsonschema:"The city, e.g. Lisbon."`
	Units string `json:"units,omitempty" jsonschema:"celsius or fahrenheit (default celsius)."`
}

func ExampleFunc() {
	weather := tools.MustFunc("weather", "Current weather for a city.",
		func(ctx context.Context, a weatherArgs) (tools.Result, error) {
			if a.City == "Atlantis" {
				return tools.Failf("no weather station in %s", a.City), nil
			}
			return tools.Text(fmt.Sprintf("Sunny in %s, 21°", a.City)), nil
		})

	schema, _ := json.Marshal(weather.Parameters())
	fmt.Println(string(schema))

	res, _ := weather.Run(context.Background(), json.RawMessage(`{"city":"Lisbon"}`))
	fmt.Println(res.Content())
	res, _ = weather.Run(context.Background(), json.RawMessage(`{"city":"Atlantis"}`))
	fmt.Println(res.Content())
	res, _ = weather.Run(context.Background(), json.RawMessage(`{"town":"Lisbon"}`))
	fmt.Println(res.Content())
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"The city, e.g. Lisbon."},"units":{"type":"string","description":"celsius or fahrenheit (default celsius)."}},"required":["city"],"additionalProperties":false}
	// Sunny in Lisbon, 21°
	// Error: no weather station in Atlantis
	// Error: invalid arguments for weather: unexpected additional properties ["town"]
}

func ExampleCollection_Execute() {
	echo := tools.MustFunc("echo", "Repeats text.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (tools.Result, error) {
		return tools.Text(a.Text), nil
	})
	c, err := tools.NewCollection(echo, tools.NewTerminate())
	if err != nil {
		panic(err)
	}

	// What the model asked for, as a provider returns it.
	calls := []schemas.ToolCall{
		{ID: "1", Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)},
		{ID: "2", Name: "ecko", Arguments: json.RawMessage(`{}`)},
		{ID: "3", Name: "echo", Arguments: json.RawMessage(`{"text":`)},
		{ID: "4", Name: "terminate", Arguments: json.RawMessage(`{"status":"success","answer":"Said hello."}`)},
	}
	for _, call := range calls {
		res, err := c.Execute(context.Background(), call)
		if err != nil { // infrastructure failure or cancellation: the agent decides
			fmt.Println("error:", err)
		}
		msg := res.Message(call) // the tool message to append to the conversation
		fmt.Printf("%s → %s\n", call.ID, msg.Content)
		if tools.IsTerminate(call) && !res.Failed() {
			t, _ := tools.ParseTerminate(call)
			fmt.Printf("done: %s, %q\n", t.Status, t.Answer)
		}
	}
	// Output:
	// 1 → hello
	// 2 → Error: unknown tool "ecko"; available tools: echo, terminate
	// 3 → Error: invalid arguments for echo: arguments are not valid JSON: unexpected EOF
	// 4 → The task is finished (status: success).
	// done: success, "Said hello."
}

func ExampleNewPlanning() {
	p, _ := tools.NewPlanning(tools.PlanningOptions{})
	_, _ = p.CreatePlan("", "Answer the question", []string{"Search", "Read sources", "Write the answer"})
	_, _ = p.MarkStep("", 0, tools.StepCompleted, "3 good sources")
	res, _ := p.Run(context.Background(), json.RawMessage(`{"command":"mark_step","step_index":1,"step_status":"in_progress"}`))
	fmt.Print(res.Output)
	// Output:
	// Step 1 of plan plan_1 is in_progress.
	//
	// Plan: Answer the question (ID: plan_1)
	// Progress: 1/3 steps completed (33%)
	// Status: 1 completed, 1 in progress, 0 blocked, 1 not started
	//
	// Steps:
	// 0. [✓] Search
	//    Notes: 3 good sources
	// 1. [→] Read sources
	// 2. [ ] Write the answer
}

func ExampleNewTerminalAsker() {
	asker := tools.NewTerminalAsker(strings.NewReader("metric\n"), &strings.Builder{})
	ask, _ := tools.NewAskHuman(tools.AskHumanOptions{Asker: asker})
	res, _ := ask.Run(context.Background(), json.RawMessage(`{"question":"Which units?"}`))
	fmt.Println(res.Output)
	// Output: The user answered: metric
}
