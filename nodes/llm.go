package nodes

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// Structured is a node that asks a model for a reply of type T — a JSON
// document matching T's JSON Schema, parsed, validated and re-asked once if
// invalid (see llm.Structured) — and turns it into an update.
//
//	g.AddNode("plan", nodes.Structured[State, Plan]{
//		Model:  model,
//		Role:   "plan",
//		Prompt: func(s State) []schemas.Message { return []schemas.Message{schemas.UserMessage(s.Task)} },
//		Write:  func(s State, p Plan) graph.Update[State] { return graph.Writes(Steps.Set(p.Steps)) },
//		Usage:  Usage,
//	}.Node(), nodes.ModelRetry(nil)) // retry rate limits, outages, cut streams
type Structured[S, T any] struct {
	Model  llm.Model
	Prompt func(S) []schemas.Message
	Write  func(S, T) graph.Update[S]
	// Options are passed to every call (temperature, re-asks, …).
	Options []llm.Option
	// Role names the call in usage accounting (llm.RoleQuery, …).
	Role string
	// Usage, when set, receives the tokens and calls this node spent. An
	// attempt that fails spends too: it fails with an *llm.UsageError and
	// emits a FailedUsage (see FailWithUsage).
	Usage *graph.ReduceField[S, llm.UsageByRole]
}

// Node returns the node function.
func (n Structured[S, T]) Node() graph.NodeFunc[S] {
	return func(ctx context.Context, s S) (graph.Update[S], error) {
		if n.Model == nil {
			return graph.Update[S]{}, fmt.Errorf("%w for the %q step", llm.ErrNoModel, n.Role)
		}
		model, meter := metered(n.Model, n.Role, n.Usage != nil)
		out, err := llm.Structured[T](ctx, model, n.Prompt(s), n.Options...)
		if err != nil {
			return graph.Update[S]{}, failWith(ctx, err, meter)
		}
		return withUsage(n.Write(s, out), n.Usage, meter), nil
	}
}

// Generate is a node that asks a model for a free-text reply and turns the
// response into an update. When the run is streamed, the reply's tokens reach
// the stream as llm.Token events tagged with Role.
type Generate[S any] struct {
	Model   llm.Model
	Prompt  func(S) []schemas.Message
	Write   func(S, *llm.Response) graph.Update[S]
	Options []llm.Option
	Role    string
	Usage   *graph.ReduceField[S, llm.UsageByRole]
}

// Node returns the node function.
func (n Generate[S]) Node() graph.NodeFunc[S] {
	return func(ctx context.Context, s S) (graph.Update[S], error) {
		if n.Model == nil {
			return graph.Update[S]{}, fmt.Errorf("%w for the %q step", llm.ErrNoModel, n.Role)
		}
		model, meter := metered(n.Model, n.Role, n.Usage != nil)
		opts := append(n.Options[:len(n.Options):len(n.Options)], llm.EmitDeltas(ctx, n.Role))
		resp, err := model.Generate(ctx, n.Prompt(s), opts...)
		if err != nil {
			return graph.Update[S]{}, failWith(ctx, err, meter)
		}
		return withUsage(n.Write(s, resp), n.Usage, meter), nil
	}
}

// metered wraps m so the calls of one node run are counted.
func metered(m llm.Model, role string, want bool) (llm.Model, *llm.Meter) {
	if !want {
		return m, nil
	}
	meter := new(llm.Meter)
	return llm.Metered(m, meter, role), meter
}

func withUsage[S any](u graph.Update[S], field *graph.ReduceField[S, llm.UsageByRole], meter *llm.Meter) graph.Update[S] {
	if field == nil || meter == nil {
		return u
	}
	return u.With(field.Merge(meter.Snapshot()))
}
