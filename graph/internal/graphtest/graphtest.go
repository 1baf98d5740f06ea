// Package graphtest holds the graphs that every way of running a graph's
// tasks must run to the same end: the engine in-process, through a
// graph.TaskRunner (graph's remote tests) and as a Temporal workflow
// (graph/temporalgraph's tests). It declares one state type with a field of
// each kind, its handles, and the shapes: a table of named graphs with
// their input and the state and error a run ends with. Each runner's tests
// iterate the table and add the checks of their own.
//
// It imports nothing but the standard library and package graph, as graph
// itself does, and no test framework: Shape.Check reports a difference as
// an error.
package graphtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// State is the state of the shared graphs. It has a field of each kind
// (Value, Append, Reduce of a number and of a map) and survives JSON whole,
// as a remote or durable run needs.
type State struct {
	Log    []string
	N      int
	Items  []string
	Total  int
	Counts map[string]int
}

// The handles of State's fields.
var (
	Log    = graph.Append(func(s *State) *[]string { return &s.Log })
	N      = graph.Value(func(s *State) *int { return &s.N })
	Items  = graph.Append(func(s *State) *[]string { return &s.Items })
	Total  = graph.Reduce(func(s *State) *int { return &s.Total }, func(cur, upd int) int { return cur + upd })
	Counts = graph.Reduce(func(s *State) *map[string]int { return &s.Counts }, func(cur, upd map[string]int) map[string]int {
		out := maps.Clone(cur)
		if out == nil {
			out = map[string]int{}
		}
		for k, v := range upd {
			out[k] += v
		}
		return out
	})
)

// New is an empty graph of State with all its fields.
func New() *graph.Graph[State] { return graph.New[State](Log, N, Items, Total, Counts) }

// LogNode is a node that appends its name to Log.
func LogNode(name string) graph.NodeFunc[State] {
	return func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(Log.Add(name)), nil
	}
}

// Job is a Send payload of a struct type, to see it cross JSON.
type Job struct {
	Name   string
	Weight int
}

// Shape is a graph and a run of it: its input, and the state and error the
// run ends with, whatever runs its tasks.
type Shape struct {
	Name string
	// Build compiles the graph anew: call it once for each run (and for a
	// worker's copy), so that each gets its own counters and channels.
	Build func() (*graph.Compiled[State], error)
	In    State
	// RecursionLimit, if not 0, is the run's recursion limit
	// (graph.RecursionLimit, or a runner's own way of passing it).
	RecursionLimit int
	// Tasks is how many tasks the run runs, each once.
	Tasks int
	// Want is the state the run ends with, also when it fails.
	Want State
	// WantErr, if not nil, is what the run's error is (errors.Is).
	WantErr error
}

// Check says how a run's outcome differs from the shape's: nil if it
// does not.
func (s Shape) Check(out State, err error) error {
	switch {
	case s.WantErr == nil && err != nil:
		return fmt.Errorf("%s: the run failed: %w", s.Name, err)
	case s.WantErr != nil && !errors.Is(err, s.WantErr):
		return fmt.Errorf("%s: the run ended with error %v, want %v", s.Name, err, s.WantErr)
	case !reflect.DeepEqual(out, s.Want):
		return fmt.Errorf("%s: the run ended in state\n\t%#v\nwant\n\t%#v", s.Name, out, s.Want)
	}
	return nil
}

// Loop is a node that adds 1 to N and routes back to itself for ever:
// only a recursion limit ends its run.
func Loop(opts ...graph.Option) (*graph.Compiled[State], error) {
	g := New()
	g.AddNode("loop", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(N.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "loop")
	g.AddConditional("loop", func(State) graph.Route { return graph.Goto("loop") }, "loop")
	return g.Compile(opts...)
}

// Shapes is the table of shared graphs: a sequence, a fan-out whose tasks
// finish in reverse order, a conditional loop, a join, Goto and Send
// commands, Reduce fields, a Set over Appends, a subgraph and a recursion
// limit.
func Shapes() []Shape {
	return []Shape{
		{
			Name: "sequence",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				for _, n := range []string{"a", "b", "c"} {
					g.AddNode(n, LogNode(n))
				}
				g.AddNode("count", func(_ context.Context, s State) (graph.Update[State], error) {
					return graph.Writes(N.Set(len(s.Log))), nil
				})
				g.AddSequence(graph.Start, "a", "b", "c", "count", graph.End)
				return g.Compile()
			},
			In:    State{Log: []string{"input"}},
			Tasks: 4,
			Want:  State{Log: []string{"input", "a", "b", "c"}, N: 4},
		},
		{
			// Task i sleeps inversely to its index, and waits besides until
			// task i+1 has finished, so the tasks finish in reverse order,
			// for certain, and only if they run concurrently. Each records
			// its rank; the merge is in task order all the same.
			Name: "Send fan-out finishing in reverse order",
			Build: func() (*graph.Compiled[State], error) {
				const width = 6
				done := make([]chan struct{}, width)
				for i := range done {
					done[i] = make(chan struct{})
				}
				var rank atomic.Int32
				g := New()
				g.AddNode("split", LogNode("split"))
				graph.AddTask(g, "work", func(ctx context.Context, i int) (graph.Update[State], error) {
					time.Sleep(time.Duration(width-i) * 5 * time.Millisecond)
					if i+1 < width {
						select {
						case <-done[i+1]:
						case <-time.After(10 * time.Second):
							return graph.Update[State]{}, graph.Permanent(fmt.Errorf("task %d: task %d never finished: the tasks do not run in parallel", i, i+1))
						}
					}
					r := rank.Add(1)
					close(done[i])
					return graph.Writes(Items.Add(fmt.Sprint(i)), Log.Add(fmt.Sprintf("%d finished #%d", i, r))), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "work", func(State) []int { return []int{0, 1, 2, 3, 4, 5} })
				g.AddEdge("work", graph.End)
				return g.Compile()
			},
			Tasks: 7,
			Want: State{
				Items: []string{"0", "1", "2", "3", "4", "5"},
				Log:   []string{"split", "0 finished #6", "1 finished #5", "2 finished #4", "3 finished #3", "4 finished #2", "5 finished #1"},
			},
		},
		{
			Name: "conditional loop with a counter",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				g.AddNode("inc", func(_ context.Context, s State) (graph.Update[State], error) {
					return graph.Writes(N.Set(s.N+1), Log.Add(fmt.Sprint("inc ", s.N))), nil
				})
				g.AddNode("done", LogNode("done"))
				g.AddEdge(graph.Start, "inc")
				g.AddConditional("inc", func(s State) graph.Route {
					if s.N < 5 {
						return graph.Goto("inc")
					}
					return graph.Goto("done")
				}, "inc", "done")
				g.AddEdge("done", graph.End)
				return g.Compile()
			},
			In:    State{N: 1},
			Tasks: 5,
			Want:  State{N: 5, Log: []string{"inc 1", "inc 2", "inc 3", "inc 4", "done"}},
		},
		{
			// e waits for c, two steps after a, and for d, one step after.
			Name: "join",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					g.AddNode(n, LogNode(n))
				}
				g.AddEdge(graph.Start, "a")
				g.AddSequence("a", "b", "c")
				g.AddEdge("a", "d")
				g.AddJoin([]string{"c", "d"}, "e")
				g.AddEdge("e", graph.End)
				return g.Compile()
			},
			Tasks: 5,
			Want:  State{Log: []string{"a", "b", "d", "c", "e"}},
		},
		{
			Name: "Goto and Send commands",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				g.AddNode("decide", func(context.Context, State) (graph.Update[State], error) {
					return graph.Writes(Log.Add("decide")).Goto("after").
						Send(graph.Send{Node: "work", Arg: Job{Name: "z", Weight: 2}}, graph.Send{Node: "work", Arg: Job{Name: "y", Weight: 3}}), nil
				}, graph.Destinations("after", "work"))
				g.AddNode("after", LogNode("after"))
				graph.AddTask(g, "work", func(_ context.Context, j Job) (graph.Update[State], error) {
					return graph.Writes(Items.Add(fmt.Sprintf("%s:%d", j.Name, j.Weight)), Total.Merge(j.Weight)), nil
				})
				g.AddEdge(graph.Start, "decide")
				g.AddEdge("after", graph.End)
				g.AddEdge("work", graph.End)
				return g.Compile()
			},
			Tasks: 4,
			Want:  State{Log: []string{"decide", "after"}, Items: []string{"z:2", "y:3"}, Total: 5},
		},
		{
			Name: "Reduce fields",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				g.AddNode("split", LogNode("split"))
				graph.AddTask(g, "weigh", func(_ context.Context, i int) (graph.Update[State], error) {
					parity := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
					return graph.Writes(Total.Merge(i), Counts.Merge(map[string]int{parity: 1})), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "weigh", func(State) []int { return []int{1, 2, 3, 4, 5} })
				g.AddEdge("weigh", graph.End)
				return g.Compile()
			},
			In:    State{Total: 100, Counts: map[string]int{"seed": 1}},
			Tasks: 6,
			Want:  State{Log: []string{"split"}, Total: 115, Counts: map[string]int{"seed": 1, "even": 2, "odd": 3}},
		},
		{
			Name: "a Set wins over the step's Appends",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				g.AddNode("add1", func(context.Context, State) (graph.Update[State], error) {
					return graph.Writes(Items.Add("one")), nil
				})
				g.AddNode("reset", func(context.Context, State) (graph.Update[State], error) {
					return graph.Writes(Items.Set([]string{"fresh"}), Items.Add("by reset")), nil
				})
				g.AddNode("add2", func(context.Context, State) (graph.Update[State], error) {
					return graph.Writes(Items.Add("two")), nil
				})
				for _, n := range []string{"add1", "reset", "add2"} {
					g.AddEdge(graph.Start, n)
					g.AddEdge(n, graph.End)
				}
				return g.Compile()
			},
			In:    State{Items: []string{"old"}},
			Tasks: 3,
			Want:  State{Items: []string{"fresh", "by reset"}},
		},
		{
			Name: "subgraph",
			Build: func() (*graph.Compiled[State], error) {
				inner := New()
				inner.AddNode("x", LogNode("x"))
				inner.AddNode("y", func(ctx context.Context, s State) (graph.Update[State], error) {
					graph.Emit(ctx, "from y")
					return graph.Writes(Log.Add("y"), N.Set(s.N+10)), nil
				})
				inner.AddSequence(graph.Start, "x", "y", graph.End)
				sub, err := inner.Compile()
				if err != nil {
					return nil, err
				}
				g := New()
				g.AddNode("before", LogNode("before"))
				g.AddSubgraph("sub", sub)
				g.AddNode("sibling", LogNode("sibling"))
				g.AddNode("after", LogNode("after"))
				g.AddEdge(graph.Start, "before")
				g.AddEdge("before", "sub")
				g.AddEdge("before", "sibling")
				g.AddJoin([]string{"sub", "sibling"}, "after")
				g.AddEdge("after", graph.End)
				return g.Compile()
			},
			In:    State{N: 1},
			Tasks: 4,
			Want:  State{Log: []string{"before", "x", "y", "sibling", "after"}, N: 11},
		},
		{
			// A deferred node (graph.Defer) reached by a short and a long
			// branch runs once, after both.
			Name: "deferred node",
			Build: func() (*graph.Compiled[State], error) {
				g := New()
				for _, n := range []string{"a", "a2", "b"} {
					g.AddNode(n, LogNode(n))
				}
				g.AddNode("sum", func(_ context.Context, s State) (graph.Update[State], error) {
					return graph.Writes(N.Set(len(s.Log))), nil
				}, graph.Defer())
				g.AddEdge(graph.Start, "a")
				g.AddEdge(graph.Start, "b")
				g.AddSequence("a", "a2", "sum", graph.End)
				g.AddEdge("b", "sum")
				return g.Compile()
			},
			Tasks: 4,
			Want:  State{Log: []string{"a", "b", "a2"}, N: 3},
		},
		{
			// An inner node's Command to the parent (graph.ToParent): its
			// update replaces the subgraph's writes and routes in the parent.
			Name: "Command to the parent graph",
			Build: func() (*graph.Compiled[State], error) {
				inner := New()
				inner.AddNode("x", LogNode("x"))
				inner.AddNode("up", func(_ context.Context, s State) (graph.Update[State], error) {
					return graph.Update[State]{}, graph.ToParent(graph.Writes(Log.Add("up"), N.Set(s.N+1)).Goto("human"))
				})
				inner.AddNode("never", LogNode("never"))
				inner.AddSequence(graph.Start, "x", "up", "never", graph.End)
				sub, err := inner.Compile()
				if err != nil {
					return nil, err
				}
				g := New()
				g.AddSubgraph("sub", sub, graph.Destinations("human", graph.End))
				g.AddNode("human", LogNode("human"))
				g.AddEdge(graph.Start, "sub")
				g.AddEdge("human", graph.End)
				return g.Compile()
			},
			In:    State{N: 1},
			Tasks: 2,
			Want:  State{Log: []string{"up", "human"}, N: 2},
		},
		{
			// The state of the last completed step comes back with the
			// error.
			Name:           "recursion limit",
			Build:          func() (*graph.Compiled[State], error) { return Loop() },
			RecursionLimit: 4,
			Tasks:          4,
			Want:           State{N: 4},
			WantErr:        graph.ErrRecursionLimit,
		},
	}
}
