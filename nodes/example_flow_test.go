package nodes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
)

// A flow with Approve pauses for its plan; Saved reads the stored run —
// here from another process's point of view, with nothing run — and Resume
// with the approval goes on.
func ExampleFlow_Saved() {
	planner := fake.New(
		fake.ToolCalls(fake.ToolCall("planning", map[string]any{"command": "create", "title": "Notes", "steps": []string{"Write notes.md"}})),
		fake.Text("The notes were written."),
	)
	store := graph.NewMemorySaver() // a durable store (graph/checkpoint/sqlite) in a real program
	flow, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Approve: true, Checkpointer: store,
		Executors: []nodes.FlowExecutor{{Name: "writer", Executor: nodes.ExecutorFunc(func(context.Context, nodes.StepTask) (nodes.StepResult, error) {
			return nodes.StepResult{Output: "Wrote notes.md."}, nil
		})}}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = flow.Run(ctx, "Write notes", nil, graph.Thread("notes"))
	fmt.Println("paused:", errors.Is(err, graph.ErrInterrupted))

	saved, err := flow.Saved(ctx, "notes")
	if err != nil {
		panic(err)
	}
	fmt.Printf("waits for the review of %q (%d step)\n", saved.Waiting.Plan.Title, len(saved.Waiting.Plan.Steps))

	res, err := flow.Resume(ctx, nil, graph.Thread("notes"), graph.Answer(nodes.PlanApproval{}))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, "—", res.Summary)
	// Output:
	// paused: true
	// waits for the review of "Notes" (1 step)
	// completed — The notes were written.
}
