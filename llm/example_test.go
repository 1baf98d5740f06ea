package llm_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

// Structured asks for a typed reply. Here the model answers the way small
// local models often do — reasoning, a code fence, a trailing comma — and
// the reply is still read; the schema sent is derived from the Go type.
func ExampleStructured() {
	model := fake.New(fake.Text("<think>Two aspects: syntax and performance.</think>\n" +
		"```json\n{\"query\": [\"go range-over-func syntax\", \"go iterator performance\"], \"rationale\": \"syntax and cost\",}\n```"))

	msgs := []schemas.Message{schemas.UserMessage("How do Go iterators work, and are they fast?")}
	q, err := llm.Structured[schemas.SearchQueryList](context.Background(), model, msgs, llm.Temperature(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(q.Query)
	fmt.Println(q.Rationale)

	req := model.Calls()[0].Request
	fmt.Println(req.SchemaName, req.Schema.Required)
	// Output:
	// [go range-over-func syntax go iterator performance]
	// syntax and cost
	// SearchQueryList [query rationale]
}

// When a reply does not match the schema, Structured asks once more,
// quoting the problem; if that fails too the error is a *StructuredError.
func ExampleStructured_reask() {
	model := fake.New(
		fake.Text(`{"is_sufficient": "probably"}`),
		fake.JSON(schemas.Reflection{IsSufficient: false, KnowledgeGap: "benchmarks", FollowUpQueries: []string{"go iterator benchmarks"}}),
	)
	r, err := llm.Structured[schemas.Reflection](context.Background(), model, []schemas.Message{schemas.UserMessage("Enough?")})
	fmt.Println(r.FollowUpQueries, err)

	reask := model.Calls()[1].LastMessage().Content
	fmt.Println(strings.Contains(reask, "is_sufficient"), len(model.Calls()))
	// Output:
	// [go iterator benchmarks] <nil>
	// true 2
}

// Metered records every call in a Meter by role; the snapshot is what a run
// reports (and what a graph state can accumulate with UsageByRole.Merge).
func ExampleMetered() {
	base := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"a", "b"}, Rationale: "r"}).WithTokens(120, 20),
		fake.Text("summary a").WithTokens(300, 80),
		fake.Text("summary b").WithTokens(310, 75),
		fake.Text("final answer").WithTokens(700, 150),
	)
	var meter llm.Meter
	ctx := context.Background()
	msgs := []schemas.Message{schemas.UserMessage("question")}

	_, _ = llm.Structured[schemas.SearchQueryList](ctx, llm.Metered(base, &meter, llm.RoleQuery), msgs)
	research := llm.Metered(base, &meter, llm.RoleResearch)
	_, _ = research.Generate(ctx, msgs)
	_, _ = research.Generate(ctx, msgs)
	_, _ = llm.Metered(base, &meter, llm.RoleAnswer).Generate(ctx, msgs)

	usage := meter.Snapshot()
	for _, role := range usage.Roles() {
		t := usage[role]
		fmt.Printf("%-8s calls=%d tokens=%d\n", role, t.Calls, t.Usage.TotalTokens)
	}
	total := usage.Total()
	fmt.Printf("total    calls=%d tokens=%d\n", total.Calls, total.Usage.TotalTokens)
	// Output:
	// answer   calls=1 tokens=850
	// query    calls=1 tokens=140
	// research calls=2 tokens=765
	// total    calls=4 tokens=1755
}

// Stream yields a reply's deltas as they arrive.
func ExampleStream() {
	model := fake.New(fake.Text("Iterators are functions that yield.").Chunks(12))
	for d, err := range llm.Stream(context.Background(), model, []schemas.Message{schemas.UserMessage("Explain.")}) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Printf("%q\n", d.Content)
	}
	// Output:
	// "Iterators ar"
	// "e functions "
	// "that yield."
}

func ExampleParseSpec() {
	for _, spec := range []string{"gemini:gemini-2.5-flash", "ollama:qwen3:8b", "claude:claude-sonnet-4-5"} {
		provider, model, err := llm.ParseSpec(spec)
		fmt.Println(provider, model, err)
	}
	_, _, err := llm.ParseSpec("gpt-4o")
	fmt.Println(strings.SplitN(err.Error(), ";", 2)[0])
	// Output:
	// gemini gemini-2.5-flash <nil>
	// ollama qwen3:8b <nil>
	// anthropic claude-sonnet-4-5 <nil>
	// invalid model spec "gpt-4o": no provider prefix (did you mean openai:gpt-4o?)
}

func ExampleExtractJSON() {
	reply := "Sure! Here you go:\n{\n  'query': [\"go generics\",], // one is enough\n  rationale: “short”\n}\nAnything else?"
	data, err := llm.ExtractJSON(reply)
	fmt.Println(string(data), err)
	// Output:
	// {"query":["go generics"],"rationale":"short"} <nil>
}

func ExampleUsageByRole_Merge() {
	state := llm.UsageByRole{}
	for _, upd := range []llm.UsageByRole{
		llm.UsageFor(llm.RoleResearch, llm.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}),
		llm.UsageFor(llm.RoleResearch, llm.Usage{PromptTokens: 90, CompletionTokens: 30, TotalTokens: 120}),
	} {
		state = state.Merge(upd) // what graph.Reduce does with llm.UsageByRole.Merge
	}
	fmt.Println(state[llm.RoleResearch].Calls, state[llm.RoleResearch].Usage.TotalTokens)
	// Output:
	// 2 240
}

// EmitDeltas streams a node's model reply into the graph run's stream,
// where the consumer (the CLI, an SSE handler) receives llm.Token values.
func ExampleEmitDeltas() {
	type State struct{ Answer string }
	answer := graph.Value(func(s *State) *string { return &s.Answer })
	model := fake.New(fake.Text("Iterators yield values.").Chunks(10))

	g := graph.New[State](answer)
	g.AddNode("finalize_answer", func(ctx context.Context, s State) (graph.Update[State], error) {
		resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage("Explain.")}, llm.EmitDeltas(ctx, llm.RoleAnswer))
		if err != nil {
			return graph.Update[State]{}, err
		}
		return graph.Writes(answer.Set(resp.Content)), nil
	})
	g.AddEdge(graph.Start, "finalize_answer")
	g.AddEdge("finalize_answer", graph.End)
	run, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range run.Stream(context.Background(), State{}, graph.Events(graph.EventCustom)) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if tok, ok := ev.Value.(llm.Token); ok {
			fmt.Printf("%s/%s: %q\n", ev.Node, tok.Role, tok.Content)
		}
	}
	// Output:
	// finalize_answer/answer: "Iterators "
	// finalize_answer/answer: "yield valu"
	// finalize_answer/answer: "es."
}

// CallModel is how a provider retries a reply whose stream broke off after
// its 200. Here the first attempt is cut after "Hal"; the caller's OnDelta
// is told to restart, and the second attempt's reply is returned.
func ExampleCallModel() {
	attempts := 0
	send := func(_ context.Context, onDelta func(llm.Delta)) (*llm.Response, error) {
		attempts++
		if attempts == 1 {
			onDelta(llm.Delta{Content: "Hal"})
			return nil, &llm.APIError{Provider: "acme", Message: "the event stream broke off",
				Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken)}
		}
		onDelta(llm.Delta{Content: "Hello"})
		return &llm.Response{Content: "Hello"}, nil
	}
	var shown strings.Builder
	onDelta := func(d llm.Delta) {
		if d.Restart {
			shown.Reset() // drop the cut attempt's text
		}
		shown.WriteString(d.Content)
	}
	resp, err := llm.CallModel(context.Background(), llm.ClientConfig{RetryBackoff: time.Millisecond}, "acme", onDelta, send)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Content, shown.String(), attempts)
	// Output: Hello Hello 2
}

// IsTransient separates errors worth another attempt from those that would
// only fail again.
func ExampleIsTransient() {
	for _, err := range []error{
		&llm.APIError{Provider: "openai", Status: 429, Message: "slow down"},
		&llm.APIError{Provider: "anthropic", Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken)},
		&llm.APIError{Provider: "openai", Status: 401, KeyEnv: "OPENAI_API_KEY", Message: "bad key"},
		context.Canceled,
	} {
		fmt.Println(llm.IsTransient(err), err)
	}
	// Output:
	// true openai: Too Many Requests (429): slow down
	// true anthropic: stream ended before the reply was complete: connection reset
	// false openai: OPENAI_API_KEY was rejected (401): bad key
	// false context canceled
}

// SchemaJSON is how a provider encodes Request.Schema: for the schemas
// Structured sends, the bytes are encoded once per Go type and reused.
func ExampleSchemaJSON() {
	model := schemaModel{got: make(chan *llm.Request, 1)} // records each call's request
	if _, err := llm.Structured[schemas.SearchQueryList](context.Background(), model, []schemas.Message{schemas.UserMessage("Go iterators?")}); err != nil {
		fmt.Println(err)
		return
	}
	sent := <-model.got
	data, err := llm.SchemaJSON(sent.Schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sent.SchemaName, strings.Contains(string(data), `"required":["query","rationale"]`))
	// Output: SearchQueryList true
}
