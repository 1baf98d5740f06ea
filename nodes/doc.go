// Package nodes holds reusable node types for graphs built with package
// graph: LLM calls with structured output (Structured) or free text
// (Generate), and the ReAct agent (Agent), which thinks with a model, acts
// with tools and observes their results until the task is done.
//
// Each node type is a struct you fill in and turn into a graph.NodeFunc with
// its Node method, so the same configuration reads the same everywhere:
//
//	g.AddNode("reflect", nodes.Structured[State, schemas.Reflection]{
//		Model:  model,
//		Role:   llm.RoleReflection,
//		Prompt: reflectionPrompt,
//		Write:  func(s State, r schemas.Reflection) graph.Update[State] { return graph.Writes(Gap.Set(r.KnowledgeGap)) },
//	}.Node())
//
// Usage accounting is opt-in per node: give it a graph.ReduceField over
// llm.UsageByRole (merged with llm.UsageByRole.Merge) and each run of the
// node adds the tokens and calls it spent, under its Role, to the state.
// A failed attempt writes nothing: it fails with an *llm.UsageError and
// emits a FailedUsage to the run's stream, which Agent.Run and Flow.Run
// add to the result's usage (FailWithUsage does this for nodes of your
// own).
package nodes
