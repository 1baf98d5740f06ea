package temporalgraph_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// A graph run as a Temporal workflow: each task — here each shout of the
// fan-out — is an activity. The SDK's test environment stands in for a
// worker and a server; in production, Register takes a worker.Worker and
// Start a client.Client.
func Example() {
	type State struct {
		Words  []string `json:"words"`
		Shouts []string `json:"shouts"`
	}
	words := graph.Value(func(s *State) *[]string { return &s.Words })
	shouts := graph.Append(func(s *State) *[]string { return &s.Shouts })

	g := graph.New[State](words, shouts)
	g.AddNode("split", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(words.Set(strings.Fields("typed graphs on temporal"))), nil
	})
	graph.AddTask(g, "shout", func(_ context.Context, w string) (graph.Update[State], error) {
		return graph.Writes(shouts.Add(strings.ToUpper(w))), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "shout", func(s State) []string { return s.Words })
	g.AddEdge("shout", graph.End)
	c, err := g.Compile()
	if err != nil {
		panic(err)
	}

	tg, err := temporalgraph.New("shouter", c, temporalgraph.Options[State]{})
	if err != nil {
		panic(err)
	}

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	env := suite.NewTestWorkflowEnvironment()
	tg.Register(env)
	env.ExecuteWorkflow(tg.WorkflowName(), temporalgraph.Input[State]{})
	if err := env.GetWorkflowError(); err != nil {
		panic(err)
	}
	var out State
	if err := env.GetWorkflowResult(&out); err != nil {
		panic(err)
	}
	fmt.Println(tg.WorkflowName(), out.Shouts)
	// Output: shouter@v1 [TYPED GRAPHS ON TEMPORAL]
}
