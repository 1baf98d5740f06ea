package graph_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/deepgraph/deepgraph/graph"
)

// A linear pipeline: each node reads the state and returns what it writes.
func Example() {
	type State struct {
		Text  string
		Words []string
		Count int
	}
	var (
		text  = graph.Value(func(s *State) *string { return &s.Text })
		words = graph.Append(func(s *State) *[]string { return &s.Words })
		count = graph.Value(func(s *State) *int { return &s.Count })
	)

	g := graph.New[State](text, words, count)
	g.AddNode("clean", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(text.Set(strings.ToLower(strings.TrimSpace(s.Text)))), nil
	})
	g.AddNode("split", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(words.Add(strings.Fields(s.Text)...)), nil
	})
	g.AddNode("count", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(count.Set(len(s.Words))), nil
	})
	g.AddSequence(graph.Start, "clean", "split", "count", graph.End)

	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	out, err := run.Invoke(context.Background(), State{Text: "  Typed State Graphs in Go "})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Words, out.Count)
	// Output: [typed state graphs in go] 5
}

// Map-reduce: a fan-out sends one task per item; the tasks run in parallel
// and their appends are merged in Send order; the join runs once after all.
func Example_mapReduce() {
	type State struct {
		Topics    []string
		Summaries []string
		Report    string
	}
	var (
		summaries = graph.Append(func(s *State) *[]string { return &s.Summaries })
		report    = graph.Value(func(s *State) *string { return &s.Report })
	)

	g := graph.New[State](summaries, report)
	g.AddNode("plan", func(context.Context, State) (graph.Update[State], error) {
		return graph.Update[State]{}, nil
	})
	graph.AddTask(g, "summarise", func(_ context.Context, topic string) (graph.Update[State], error) {
		return graph.Writes(summaries.Add(strings.ToUpper(topic))), nil
	})
	g.AddNode("combine", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(report.Set(strings.Join(s.Summaries, " + "))), nil
	})
	g.AddEdge(graph.Start, "plan")
	graph.AddFanOut(g, "plan", "summarise", func(s State) []string { return s.Topics })
	g.AddEdge("summarise", "combine")
	g.AddEdge("combine", graph.End)

	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	out, err := run.Invoke(context.Background(), State{Topics: []string{"go", "graphs", "agents"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Report)
	// Output: GO + GRAPHS + AGENTS
}

// A loop: a conditional edge sends the run back to the same node until the
// state says stop. The recursion limit guards against loops that never end.
func Example_loop() {
	type State struct {
		Drafts []string
		Good   bool
	}
	var (
		drafts = graph.Append(func(s *State) *[]string { return &s.Drafts })
		good   = graph.Value(func(s *State) *bool { return &s.Good })
	)

	g := graph.New[State](drafts, good)
	g.AddNode("write", func(_ context.Context, s State) (graph.Update[State], error) {
		n := len(s.Drafts) + 1
		return graph.Writes(drafts.Add(fmt.Sprintf("draft %d", n)), good.Set(n == 3)), nil
	})
	g.AddEdge(graph.Start, "write")
	g.AddConditional("write", func(s State) graph.Route {
		if s.Good {
			return graph.Goto(graph.End)
		}
		return graph.Goto("write")
	}, "write", graph.End)

	run, err := g.Compile(graph.WithRecursionLimit(10))
	if err != nil {
		panic(err)
	}
	out, err := run.Invoke(context.Background(), State{})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Drafts)
	// Output: [draft 1 draft 2 draft 3]
}

// Streaming: the run's events arrive as they happen, including values nodes
// publish with graph.Emit — the way LLM tokens reach a terminal or a browser.
func Example_streaming() {
	type State struct{ Answer string }
	answer := graph.Value(func(s *State) *string { return &s.Answer })

	g := graph.New[State](answer)
	g.AddNode("answer", func(ctx context.Context, _ State) (graph.Update[State], error) {
		var b strings.Builder
		for _, tok := range []string{"Hello", ", ", "world"} {
			graph.Emit(ctx, tok) // a token as it is generated
			b.WriteString(tok)
		}
		return graph.Writes(answer.Set(b.String())), nil
	})
	g.AddSequence(graph.Start, "answer", graph.End)
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}

	for ev, err := range run.Stream(context.Background(), State{}) {
		if err != nil {
			panic(err)
		}
		switch ev.Kind {
		case graph.EventTaskStart:
			fmt.Println("start", ev.Node)
		case graph.EventCustom:
			fmt.Printf("token %q\n", ev.Value)
		case graph.EventEnd:
			fmt.Println("done:", ev.State.Answer)
		}
	}
	// Output:
	// start answer
	// token "Hello"
	// token ", "
	// token "world"
	// done: Hello, world
}

// A subgraph: a compiled graph over another state type runs as one node,
// with functions mapping the parent's state in and the result back.
func Example_subgraph() {
	type Doc struct {
		Title string
		Body  string
	}
	type Inner struct{ Sentences []string }
	sentences := graph.Append(func(s *Inner) *[]string { return &s.Sentences })

	inner := graph.New[Inner](sentences)
	inner.AddNode("number", func(_ context.Context, s Inner) (graph.Update[Inner], error) {
		out := make([]string, len(s.Sentences))
		for i, x := range s.Sentences {
			out[i] = fmt.Sprintf("%d. %s", i+1, strings.TrimSpace(x))
		}
		return graph.Writes(sentences.Set(out)), nil
	})
	inner.AddSequence(graph.Start, "number", graph.End)
	sub, err := inner.Compile()
	if err != nil {
		panic(err)
	}

	body := graph.Value(func(s *Doc) *string { return &s.Body })
	g := graph.New[Doc](body)
	graph.AddMappedSubgraph(g, "outline", sub,
		func(d Doc) Inner { return Inner{Sentences: strings.Split(d.Body, ".")[:2]} },
		func(in Inner) graph.Update[Doc] { return graph.Writes(body.Set(strings.Join(in.Sentences, "\n"))) })
	g.AddSequence(graph.Start, "outline", graph.End)
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	out, err := run.Invoke(context.Background(), Doc{Body: "Graphs run in steps. Tasks run in parallel."})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Body)
	// Output:
	// 1. Graphs run in steps
	// 2. Tasks run in parallel
}

// A conversation continues on a thread: the second run's input writes a
// zero value (Done back to false) and replaces a list, which an input struct
// alone cannot say — its zero fields are "not given".
func ExampleInputWrites() {
	type State struct {
		Questions []string
		Done      bool
		Turns     int
	}
	var (
		questions = graph.Append(func(s *State) *[]string { return &s.Questions })
		done      = graph.Value(func(s *State) *bool { return &s.Done })
		turns     = graph.Value(func(s *State) *int { return &s.Turns })
	)
	g := graph.New[State](questions, done, turns)
	g.AddNode("answer", func(_ context.Context, s State) (graph.Update[State], error) {
		fmt.Println("answering", s.Questions, "done:", s.Done)
		return graph.Writes(done.Set(true), turns.Set(s.Turns+1)), nil
	})
	g.AddSequence(graph.Start, "answer", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := run.Invoke(ctx, State{Questions: []string{"first"}}, graph.Thread("chat")); err != nil {
		panic(err)
	}
	out, err := run.Invoke(ctx, State{}, graph.Thread("chat"),
		graph.InputWrites(done.Set(false), questions.Set([]string{"second"})))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Questions, out.Done, out.Turns)
	// Output:
	// answering [first] done: false
	// answering [second] done: false
	// [second] true 2
}
