package fake_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

// A test scripts the replies, runs the code under test, then checks what
// the model was asked.
func ExampleModel() {
	m := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"go 1.23 iterators"}, Rationale: "one aspect"}).WithTokens(50, 12),
		fake.Text("Iterators are push functions.").Chunks(10),
	)
	ctx := context.Background()

	queries, err := llm.Structured[schemas.SearchQueryList](ctx, m, []schemas.Message{schemas.UserMessage("How do Go iterators work?")})
	fmt.Println(queries.Query, err)

	var streamed []string
	resp, err := m.Generate(ctx, []schemas.Message{schemas.UserMessage("Answer briefly.")},
		llm.OnDelta(func(d llm.Delta) { streamed = append(streamed, d.Content) }))
	fmt.Println(resp.Content, err)
	fmt.Printf("%q\n", streamed)

	for _, c := range m.Calls() {
		fmt.Printf("call %d: schema %q, last message %q\n", c.Index, c.Request.SchemaName, c.LastMessage().Content)
	}

	_, err = m.Generate(ctx, nil)
	fmt.Println(errors.Is(err, fake.ErrExhausted))
	// Output:
	// [go 1.23 iterators] <nil>
	// Iterators are push functions. <nil>
	// ["Iterators " "are push f" "unctions."]
	// call 0: schema "SearchQueryList", last message "How do Go iterators work?"
	// call 1: schema "", last message "Answer briefly."
	// true
}

// When answers concurrent calls by what they ask, not by arrival order: the
// way to script a graph's parallel fan-out.
func ExampleReply_When() {
	m := fake.New(
		fake.Text("Summary about Rust.").When(fake.Contains("rust")),
		fake.Text("Summary about Go.").When(fake.Contains("golang")),
		fake.JSON(schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}}).When(fake.Schema("Reflection")),
	)
	ctx := context.Background()
	for _, q := range []string{"golang generics", "rust traits"} {
		resp, _ := m.Generate(ctx, []schemas.Message{schemas.UserMessage(q)})
		fmt.Println(resp.Content)
	}
	r, _ := llm.Structured[schemas.Reflection](ctx, m, []schemas.Message{schemas.UserMessage("enough?")})
	fmt.Println(r.IsSufficient)
	// Output:
	// Summary about Go.
	// Summary about Rust.
	// true
}

// A Strict model refuses a conversation that leaves a tool call without
// its result, as OpenAI does.
func ExampleModel_Strict() {
	m := fake.New(fake.Text("done")).Strict()
	call := schemas.ToolCall{ID: "call_1", Name: "web_search", Arguments: []byte(`{"query":"go"}`)}
	msgs := []schemas.Message{
		schemas.UserMessage("Find Go's release date."),
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{call}},
		schemas.UserMessage("Go on."),
	}
	_, err := m.Generate(context.Background(), msgs)
	fmt.Println(errors.Is(err, llm.ErrBadRequest))

	msgs = append(msgs[:2], schemas.ToolResultMessage(call, "Go 1.0: March 2012"))
	resp, err := m.Generate(context.Background(), msgs)
	fmt.Println(resp.Content, err)
	// Output:
	// true
	// done <nil>
}
