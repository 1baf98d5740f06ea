package nodes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// An agent that fails inside an outer graph fails its node with an
// *AgentRunError: the outer graph's caller still gets what the agent had
// done, and the update the node's write function made of it.
func ExampleAgentNode_failure() {
	type outer struct{ Notes string }
	notes := graph.Value(func(s *outer) *string { return &s.Notes })
	model := fake.New(
		fake.Respond(llm.Response{Content: "Checking the changelog first.",
			ToolCalls: []schemas.ToolCall{fake.ToolCall("changelog", struct{}{})}}),
		fake.Error(&llm.APIError{Provider: "fake", Status: 401, Message: "invalid key"}),
	)
	changelog := tools.MustFunc("changelog", "Reads the changelog.", func(context.Context, struct{}) (tools.Result, error) {
		return tools.Text("v2: faster"), nil
	})
	col, _ := tools.NewCollection(changelog)
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col})
	if err != nil {
		panic(err)
	}
	g := graph.New[outer](notes)
	g.AddNode("agent", nodes.AgentNode(agent,
		func(outer) string { return "What changed in v2?" },
		func(_ outer, r *nodes.AgentResult) graph.Update[outer] {
			return graph.Writes(notes.Set(r.Answer + r.Partial))
		}))
	g.AddSequence(graph.Start, "agent", graph.End)
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	_, err = run.Invoke(context.Background(), outer{})
	var ae *nodes.AgentRunError[outer]
	if errors.As(err, &ae) {
		fmt.Println(ae.Result.Status, ae.Result.Steps, errors.Is(err, llm.ErrAuth))
	}
	// Output:
	// error 1 true
}

// AllowTools narrows what an agent may use — its own tools and those of
// its dynamic sets, such as an MCP server's, by name or pattern — and
// MaxTools (default 128) refuses a step that would offer the model more
// tools than it accepts.
func ExampleAgentConfig_allowTools() {
	var ts []tools.Tool
	for _, name := range []string{"search", "fetch", "delete_everything"} {
		ts = append(ts, tools.MustFunc(name, "A tool.", func(context.Context, struct{}) (tools.Result, error) {
			return tools.Text("ok"), nil
		}))
	}
	col, _ := tools.NewCollection(ts...)
	model := fake.New(fake.Text("Done."))
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col, DenyTools: []string{"delete_*"}})
	if err != nil {
		panic(err)
	}
	if _, err := agent.Run(context.Background(), "Tidy up", nil); err != nil {
		panic(err)
	}
	for _, d := range model.Calls()[0].Request.Tools {
		fmt.Println(d.Name)
	}
	// Output:
	// search
	// fetch
	// terminate
}

// ContextTokens bounds each model call's prompt: older steps are condensed
// into a note that keeps their source labels. EstimateTokens is the
// estimate the budget is checked against.
func ExampleAgentConfig_contextTokens() {
	page := tools.MustFunc("page", "Reads a page.", func(_ context.Context, a struct {
		N int `json:"n"`
	}) (tools.Result, error) {
		res := tools.Text(fmt.Sprintf("page %d: %0*d", a.N, 6000, 0))
		res.Sources = []tools.Source{{URL: fmt.Sprintf("https://example.com/%d", a.N)}}
		return res, nil
	})
	col, _ := tools.NewCollection(page)
	model := fake.New()
	for n := range 8 {
		model.Add(fake.ToolCalls(fake.ToolCall("page", map[string]int{"n": n})))
	}
	model.Add(fake.Text("Page 0 said zero [S1]."))
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col, ContextTokens: 5000})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), "Read the pages", nil)
	if err != nil {
		panic(err)
	}
	biggest := 0
	for _, c := range model.Calls() {
		biggest = max(biggest, nodes.EstimateTokens(c.Messages, c.Request.Tools))
	}
	fmt.Println(biggest <= 5000, res.Sources[0].URL)
	// Output:
	// true https://example.com/0
}
