// Package fake is a scripted llm.Model for tests — deepgraph's own and
// yours. It makes no network calls and answers from a script:
//
//	m := fake.New(
//		fake.JSON(schemas.SearchQueryList{Query: []string{"q1", "q2"}}).WithTokens(120, 30),
//		fake.Text("The answer.").WithReasoning("thinking…"),
//		fake.ToolCalls(fake.ToolCall("web_search", map[string]string{"query": "go iterators"})),
//		fake.Error(&llm.APIError{Provider: "fake", Status: 429}),
//	)
//
// Each call takes the first remaining reply that matches it. Replies match
// every call unless narrowed with When, which lets concurrent calls — a
// graph's fan-out, where arrival order is not fixed — be answered by what
// they ask:
//
//	fake.Text("summary of A").When(fake.Contains("topic A"))
//	fake.JSON(reflection).When(fake.Schema("Reflection"))
//
// A reply can be delayed (After, honouring the context) or never come
// (Block, for timeout tests); with the request's OnDelta set, its reasoning
// and content are streamed in chunks (Chunks) before Generate returns; tool
// calls without an ID get a deterministic one. Every call is recorded —
// messages and resolved llm.Request — for assertions (Calls). A call with no
// reply left fails with an error matching ErrExhausted that says how many
// replies were scripted.
//
// A Model is safe for concurrent use.
package fake
