package graph_test

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
)

// A thread is named one way, graph.Thread, for runs and for reading and
// editing it; At picks one of its checkpoints: here to run again from the
// draft with another topic (a fork), leaving the first branch in History.
func ExampleThread() {
	type State struct {
		Topic string
		Draft string
	}
	topic := graph.Value(func(s *State) *string { return &s.Topic })
	draft := graph.Value(func(s *State) *string { return &s.Draft })
	g := graph.New[State](topic, draft)
	g.AddNode("write", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(draft.Set("all about " + s.Topic)), nil
	})
	g.AddSequence(graph.Start, "write", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := run.Invoke(ctx, State{Topic: "graphs"}, graph.Thread("doc")); err != nil {
		panic(err)
	}
	hist, err := run.History(ctx, graph.Thread("doc"), 0)
	if err != nil {
		panic(err)
	}
	input := hist[len(hist)-1] // the oldest: the first run's input
	out, err := run.Invoke(ctx, State{Topic: "agents"}, graph.Thread("doc").At(input.CheckpointID))
	if err != nil {
		panic(err)
	}
	snap, err := run.State(ctx, graph.Thread("doc"))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Draft)
	fmt.Println(snap.State.Draft, snap.Step)
	// Output:
	// all about agents
	// all about agents 1
}

// A state update stands for a node's output with AsNode: the edit below is
// the review, so the run goes on with what follows the review.
func ExampleCompiled_UpdateState() {
	type State struct{ Text string }
	text := graph.Value(func(s *State) *string { return &s.Text })
	g := graph.New[State](text)
	g.AddNode("draft", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(text.Set("draft")), nil
	})
	g.AddNode("review", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(text.Set("reviewed by the model")), nil
	})
	g.AddNode("publish", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(text.Set(s.Text + ", published")), nil
	})
	g.AddSequence(graph.Start, "draft", "review", "publish", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithInterruptBefore("review"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = run.Invoke(ctx, State{}, graph.Thread("t"))
	fmt.Println(err != nil) // paused before the review
	snap, err := run.UpdateState(ctx, graph.Thread("t"), graph.Writes(text.Set("reviewed by a person")), graph.AsNode("review"))
	if err != nil {
		panic(err)
	}
	fmt.Println(snap.Next)
	out, err := run.Resume(ctx, graph.Thread("t"))
	fmt.Println(out.Text, err)
	// Output:
	// true
	// [publish]
	// reviewed by a person, published <nil>
}

// Breakpoints for one run: "*" (graph.AllNodes) pauses after every node, to
// step through a run.
func ExamplePauseAfter() {
	type State struct{ Done []string }
	done := graph.Append(func(s *State) *[]string { return &s.Done })
	g := graph.New[State](done)
	for _, name := range []string{"plan", "act"} {
		g.AddNode(name, func(context.Context, State) (graph.Update[State], error) {
			return graph.Writes(done.Add(name)), nil
		})
	}
	g.AddSequence(graph.Start, "plan", "act", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	out, err := run.Invoke(ctx, State{}, graph.Thread("steps"), graph.PauseAfter(graph.AllNodes))
	for err != nil {
		fmt.Println("paused:", out.Done)
		out, err = run.Resume(ctx, graph.Thread("steps"), graph.PauseAfter(graph.AllNodes))
	}
	fmt.Println("done:", out.Done)
	// Output:
	// paused: [plan]
	// done: [plan act]
}

// A client's input as JSON: every key it sends is written, zero values
// included, through the fields' reducers.
func ExampleCompiled_DecodeWrites() {
	type State struct {
		Messages []string `json:"messages"`
		Done     bool     `json:"done"`
	}
	messages := graph.Append(func(s *State) *[]string { return &s.Messages })
	done := graph.Value(func(s *State) *bool { return &s.Done })
	g := graph.New[State](messages, done)
	g.AddNode("reply", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(messages.Add("echo: "+s.Messages[len(s.Messages)-1]), done.Set(true)), nil
	})
	g.AddSequence(graph.Start, "reply", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, in := range []string{`{"messages": ["hi"]}`, `{"messages": ["again"], "done": false}`} {
		ws, err := run.DecodeWrites([]byte(in))
		if err != nil {
			panic(err)
		}
		out, err := run.Invoke(ctx, State{}, graph.Thread("chat"), graph.InputWrites(ws...))
		if err != nil {
			panic(err)
		}
		fmt.Println(out.Messages, out.Done)
	}
	// Output:
	// [hi echo: hi] true
	// [hi echo: hi again echo: again] true
}

// History audits a thread: each checkpoint's pending tasks, what their
// interrupts asked, and the answers they got.
func ExampleCompiled_History() {
	type State struct{ Plan string }
	plan := graph.Value(func(s *State) *string { return &s.Plan })
	g := graph.New[State](plan)
	g.AddNode("approve", func(ctx context.Context, s State) (graph.Update[State], error) {
		ok, err := graph.Interrupt[bool](ctx, "deploy on Friday?")
		if err != nil {
			return graph.Update[State]{}, err
		}
		return graph.Writes(plan.Set(fmt.Sprint("approved: ", ok))), nil
	})
	g.AddSequence(graph.Start, "approve", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, _ = run.Invoke(ctx, State{}, graph.Thread("ops"))
	if _, err := run.Resume(ctx, graph.Thread("ops"), graph.Answer(false)); err != nil {
		panic(err)
	}
	hist, err := run.History(ctx, graph.Thread("ops"), 0)
	if err != nil {
		panic(err)
	}
	for _, snap := range hist {
		for _, task := range snap.Tasks {
			for _, ir := range task.Interrupts {
				fmt.Printf("step %d, %s asked %s and was answered %s\n", ir.Step, task.Node, ir.Payload, ir.Answer)
			}
		}
	}
	fmt.Println(hist[0].State.Plan)
	// Output:
	// step 1, approve asked "deploy on Friday?" and was answered false
	// approved: false
}

// A paused thread resumed with an answer and an edit of its state at once
// (LangGraph's Command(resume=…, update=…)): the edit is stored with the
// answer, and the node that asked sees it when it runs again.
func ExampleWithUpdate() {
	type State struct{ Draft string }
	draft := graph.Value(func(s *State) *string { return &s.Draft })
	g := graph.New[State](draft)
	g.AddNode("write", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(draft.Set("Graphs run in steps.")), nil
	})
	g.AddNode("review", func(ctx context.Context, s State) (graph.Update[State], error) {
		ok, err := graph.Interrupt[bool](ctx, s.Draft)
		if err != nil {
			return graph.Update[State]{}, err
		}
		fmt.Printf("reviewed %q: %v\n", s.Draft, ok)
		return graph.Update[State]{}, nil
	})
	g.AddSequence(graph.Start, "write", "review", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, _ = run.Invoke(ctx, State{}, graph.Thread("doc"))
	out, err := run.Resume(ctx, graph.Thread("doc"), graph.Answer(true),
		graph.WithUpdate(graph.Writes(draft.Set("Graphs run in supersteps."))))
	fmt.Println(out.Draft, err)
	// Output:
	// reviewed "Graphs run in supersteps.": true
	// Graphs run in supersteps. <nil>
}
