package graph_test

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
)

// A node inside a subgraph hands control back to its parent with
// graph.ToParent (LangGraph's Command(graph=Command.PARENT)): the parent
// merges the update as the subgraph node's own and follows its Goto.
func ExampleToParent() {
	type Ticket struct {
		Text  string
		Route string
	}
	text := graph.Value(func(s *Ticket) *string { return &s.Text })
	route := graph.Value(func(s *Ticket) *string { return &s.Route })

	triage := graph.New[Ticket](text, route)
	triage.AddNode("classify", func(_ context.Context, t Ticket) (graph.Update[Ticket], error) {
		if t.Text == "refund now!" {
			// Not this subgraph's to handle: the parent routes to a human.
			return graph.Update[Ticket]{}, graph.ToParent(graph.Writes(route.Set("human")).Goto("human"))
		}
		return graph.Writes(route.Set("bot")), nil
	})
	triage.AddSequence(graph.Start, "classify", graph.End)
	sub, err := triage.Compile()
	if err != nil {
		panic(err)
	}

	g := graph.New[Ticket](text, route)
	g.AddSubgraph("triage", sub, graph.Destinations("human", graph.End))
	g.AddNode("human", func(_ context.Context, t Ticket) (graph.Update[Ticket], error) {
		fmt.Println("a human takes:", t.Text)
		return graph.Update[Ticket]{}, nil
	})
	g.AddEdge(graph.Start, "triage")
	g.AddEdge("human", graph.End)
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	for _, in := range []string{"where is my order?", "refund now!"} {
		out, err := run.Invoke(context.Background(), Ticket{Text: in})
		if err != nil {
			panic(err)
		}
		fmt.Println(in, "→", out.Route)
	}
	// Output:
	// where is my order? → bot
	// a human takes: refund now!
	// refund now! → human
}
