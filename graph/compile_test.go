package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func TestCompileValidation(t *testing.T) {
	noop := logNode("x")
	task := func(context.Context, string) (graph.Update[tState], error) { return graph.Update[tState]{}, nil }
	tests := []struct {
		name  string
		build func(g *graph.Graph[tState])
		want  []string
	}{
		{"unknown node in an edge", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", "ghost")
		}, []string{`edge a → ghost leads to unknown node "ghost"`}},
		{"unknown source", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
			g.AddEdge("phantom", "a")
		}, []string{`starts at unknown node "phantom"`}},
		{"unreachable node", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddNode("island", noop)
			g.AddSequence(graph.Start, "a", graph.End)
			g.AddEdge("island", graph.End)
		}, []string{`node "island" is unreachable from graph.Start`}},
		{"no way out", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddNode("sink", noop)
			g.AddSequence(graph.Start, "a", "sink")
			g.AddEdge("a", graph.End)
		}, []string{`node "sink" has no way out`}},
		{"duplicate name", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
		}, []string{`node "a" is added twice`}},
		{"reserved names", func(g *graph.Graph[tState]) {
			g.AddNode(graph.End, noop)
			g.AddNode(graph.Start, noop)
			g.AddNode("", noop)
			g.AddNode("a/b", noop)
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
		}, []string{`"__end__" is reserved`, `"__start__" is reserved`, "name is empty", `"a/b" must not contain '/'`}},
		{"no entry", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddEdge("a", graph.End)
		}, []string{"no edge from graph.Start", `node "a" is unreachable`}},
		{"edges at the wrong end", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
			g.AddEdge(graph.End, "a")
			g.AddEdge("a", graph.Start)
		}, []string{"starts at graph.End", "leads to graph.Start"}},
		{"conditional edge to unknown node", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddConditional("a", func(tState) graph.Route { return graph.Goto(graph.End) }, graph.End, "nowhere")
		}, []string{`conditional edge from a leads to unknown node "nowhere"`}},
		{"conditional edge without destinations", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
			g.AddConditional("a", func(tState) graph.Route { return graph.Route{} })
		}, []string{`conditional edge from "a" declares no destinations`}},
		{"plain edge to a task node", func(g *graph.Graph[tState]) {
			graph.AddTask(g, "t", task)
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", "t", graph.End)
		}, []string{`"t" is a task node taking string, so it runs only from Sends`}},
		{"fan-out payload type mismatch", func(g *graph.Graph[tState]) {
			graph.AddTask(g, "t", task)
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			graph.AddFanOut(g, "a", "t", func(tState) []int { return nil })
			g.AddEdge("t", graph.End)
		}, []string{`fan-out a → t: payload type mismatch: the fan-out sends int, but task node "t" takes string`}},
		{"fan-out to a state node", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddNode("b", noop)
			g.AddEdge(graph.Start, "a")
			graph.AddFanOut(g, "a", "b", func(tState) []int { return nil })
			g.AddEdge("b", graph.End)
		}, []string{`"b" is not a task node`}},
		{"unknown Command destination", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop, graph.Destinations("elsewhere"))
			g.AddEdge(graph.Start, "a")
		}, []string{`destination of node "a" leads to unknown node "elsewhere"`}},
		{"bad joins", func(g *graph.Graph[tState]) {
			g.AddNode("a", noop)
			g.AddSequence(graph.Start, "a", graph.End)
			g.AddJoin([]string{"a", "a"}, "a")
			g.AddJoin([]string{"a"}, graph.End)
			g.AddJoin(nil, "a")
		}, []string{`source "a" is listed twice`, "must lead to a node, not End", `join into "a" has no source nodes`}},
		{"nil functions", func(g *graph.Graph[tState]) {
			g.AddNode("a", nil)
			graph.AddTask[tState, string](g, "t", nil)
			g.AddNode("b", noop)
			g.AddSequence(graph.Start, "b", graph.End)
			g.AddConditional("b", nil, graph.End)
		}, []string{`node "a": function is nil`, `task node "t": function is nil`, `conditional edge from "b": router is nil`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newT()
			tt.build(g)
			_, err := g.Compile()
			require.Error(t, err)
			var ce *graph.CompileError
			require.ErrorAs(t, err, &ce)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Len(t, ce.Problems, len(tt.want), "problems: %v", err)
		})
	}
}

func TestCompileReportsAllProblemsAtOnce(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddNode("a", logNode("a"))
	g.AddEdge("a", "ghost")
	_, err := g.Compile(graph.WithRecursionLimit(0))
	var ce *graph.CompileError
	require.ErrorAs(t, err, &ce)
	assert.GreaterOrEqual(t, len(ce.Problems), 4)
	for _, p := range ce.Problems {
		assert.True(t, errors.Is(err, p))
	}
}

func TestDuplicateFieldDeclaration(t *testing.T) {
	g := graph.New[tState](tLog, tLog)
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	_, err := g.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field Log is declared twice")
}

func TestMermaid(t *testing.T) {
	g := newT()
	g.AddNode("generate_query", logNode("q"))
	graph.AddTask(g, "web_research", func(context.Context, string) (graph.Update[tState], error) { return graph.Update[tState]{}, nil })
	g.AddNode("reflection", logNode("r"))
	g.AddNode("finalize answer", logNode("f"))
	g.AddEdge(graph.Start, "generate_query")
	graph.AddFanOut(g, "generate_query", "web_research", func(tState) []string { return nil })
	g.AddEdge("web_research", "reflection")
	g.AddConditional("reflection", func(tState) graph.Route { return graph.Route{} }, "web_research", "finalize answer")
	g.AddEdge("finalize answer", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)
	assert.Equal(t, `---
config:
  flowchart:
    curve: linear
---
graph TD;
	__start__([<p>__start__</p>]):::first
	generate_query(generate_query)
	web_research(web_research)
	reflection(reflection)
	finalize_answer("finalize answer")
	__end__([<p>__end__</p>]):::last
	__start__ --> generate_query;
	web_research --> reflection;
	finalize_answer --> __end__;
	generate_query -.-> web_research;
	reflection -.-> web_research;
	reflection -.-> finalize_answer;
	classDef default fill:#f2f0ff,line-height:1.2
	classDef first fill-opacity:0
	classDef last fill:#bfb6fc
`, c.Mermaid())
	assert.Equal(t, []string{"generate_query", "web_research", "reflection", "finalize answer"}, c.Nodes())
}
