package temporalgraph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// sameCase is a graph run in-process (Invoke) and as a workflow in the
// SDK's test environment, on the same input. build is called once per run,
// so that each gets its own counters and channels.
type sameCase struct {
	name  string
	build func(t *testing.T) *graph.Compiled[tgState]
	in    tgState
	// tasks is how many tasks the run has: each runs as one activity.
	tasks int
	// check holds for the in-process run; the workflow must end in the
	// same state.
	check func(t *testing.T, out tgState)
}

func sameCases() []sameCase {
	return []sameCase{
		{
			name:  "sequence",
			tasks: 4,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				g := tgNew()
				for _, n := range []string{"a", "b", "c"} {
					g.AddNode(n, tgLogNode(n))
				}
				g.AddNode("count", func(_ context.Context, s tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgN.Set(len(s.Log))), nil
				})
				g.AddSequence(graph.Start, "a", "b", "c", "count", graph.End)
				return tgCompile(t, g)
			},
			in: tgState{Log: []string{"input"}},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"input", "a", "b", "c"}, out.Log)
				assert.Equal(t, 4, out.N)
			},
		},
		{
			// Task i sleeps inversely to its index, and waits besides
			// until task i+1 has finished, so the tasks finish in reverse
			// order, for certain, and only if they run concurrently. Each
			// records its rank; the merge is in task order all the same.
			name:  "Send fan-out finishing in reverse order",
			tasks: 6,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				const width = 5
				done := make([]chan struct{}, width)
				for i := range done {
					done[i] = make(chan struct{})
				}
				var rank atomic.Int32
				g := tgNew()
				g.AddNode("split", tgLogNode("split"))
				graph.AddTask(g, "work", func(ctx context.Context, i int) (graph.Update[tgState], error) {
					time.Sleep(time.Duration(width-i) * 5 * time.Millisecond)
					if i+1 < width {
						select {
						case <-done[i+1]:
						case <-time.After(10 * time.Second):
							return graph.Update[tgState]{}, graph.Permanent(fmt.Errorf("task %d: task %d never finished: the tasks do not run in parallel", i, i+1))
						}
					}
					r := rank.Add(1)
					close(done[i])
					return graph.Writes(tgItems.Add(fmt.Sprint(i)), tgLog.Add(fmt.Sprintf("%d finished #%d", i, r))), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "work", func(tgState) []int { return []int{0, 1, 2, 3, 4} })
				g.AddEdge("work", graph.End)
				return tgCompile(t, g)
			},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"0", "1", "2", "3", "4"}, out.Items)
				assert.Equal(t, []string{"split", "0 finished #5", "1 finished #4", "2 finished #3", "3 finished #2", "4 finished #1"}, out.Log)
			},
		},
		{
			name:  "conditional loop with a counter",
			tasks: 5,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				g := tgNew()
				g.AddNode("inc", func(_ context.Context, s tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgN.Set(s.N+1), tgLog.Add(fmt.Sprint("inc ", s.N))), nil
				})
				g.AddNode("done", tgLogNode("done"))
				g.AddEdge(graph.Start, "inc")
				g.AddConditional("inc", func(s tgState) graph.Route {
					if s.N < 5 {
						return graph.Goto("inc")
					}
					return graph.Goto("done")
				}, "inc", "done")
				g.AddEdge("done", graph.End)
				return tgCompile(t, g)
			},
			in: tgState{N: 1},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, 5, out.N)
				assert.Equal(t, []string{"inc 1", "inc 2", "inc 3", "inc 4", "done"}, out.Log)
			},
		},
		{
			name:  "join",
			tasks: 5,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				g := tgNew()
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					g.AddNode(n, tgLogNode(n))
				}
				g.AddEdge(graph.Start, "a")
				g.AddSequence("a", "b", "c")
				g.AddEdge("a", "d")
				g.AddJoin([]string{"c", "d"}, "e")
				g.AddEdge("e", graph.End)
				return tgCompile(t, g)
			},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"a", "b", "d", "c", "e"}, out.Log)
			},
		},
		{
			name:  "Goto and Send commands",
			tasks: 4,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				type job struct {
					Name   string
					Weight int
				}
				g := tgNew()
				g.AddNode("decide", func(context.Context, tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgLog.Add("decide")).Goto("after").
						Send(graph.Send{Node: "work", Arg: job{Name: "z", Weight: 2}}, graph.Send{Node: "work", Arg: job{Name: "y", Weight: 3}}), nil
				}, graph.Destinations("after", "work"))
				g.AddNode("after", tgLogNode("after"))
				graph.AddTask(g, "work", func(_ context.Context, j job) (graph.Update[tgState], error) {
					return graph.Writes(tgItems.Add(fmt.Sprintf("%s:%d", j.Name, j.Weight)), tgTotal.Merge(j.Weight)), nil
				})
				g.AddEdge(graph.Start, "decide")
				g.AddEdge("after", graph.End)
				g.AddEdge("work", graph.End)
				return tgCompile(t, g)
			},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"decide", "after"}, out.Log)
				assert.Equal(t, []string{"z:2", "y:3"}, out.Items)
				assert.Equal(t, 5, out.Total)
			},
		},
		{
			name:  "Reduce fields",
			tasks: 6,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				g := tgNew()
				g.AddNode("split", tgLogNode("split"))
				graph.AddTask(g, "weigh", func(_ context.Context, i int) (graph.Update[tgState], error) {
					parity := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
					return graph.Writes(tgTotal.Merge(i), tgCounts.Merge(map[string]int{parity: 1})), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "weigh", func(tgState) []int { return []int{1, 2, 3, 4, 5} })
				g.AddEdge("weigh", graph.End)
				return tgCompile(t, g)
			},
			in: tgState{Total: 100, Counts: map[string]int{"seed": 1}},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, 115, out.Total)
				assert.Equal(t, map[string]int{"seed": 1, "even": 2, "odd": 3}, out.Counts)
			},
		},
		{
			name:  "a Set wins over the step's Appends",
			tasks: 3,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				g := tgNew()
				g.AddNode("add1", func(context.Context, tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgItems.Add("one")), nil
				})
				g.AddNode("reset", func(context.Context, tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgItems.Set([]string{"fresh"}), tgItems.Add("by reset")), nil
				})
				g.AddNode("add2", func(context.Context, tgState) (graph.Update[tgState], error) {
					return graph.Writes(tgItems.Add("two")), nil
				})
				for _, n := range []string{"add1", "reset", "add2"} {
					g.AddEdge(graph.Start, n)
					g.AddEdge(n, graph.End)
				}
				return tgCompile(t, g)
			},
			in: tgState{Items: []string{"old"}},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"fresh", "by reset"}, out.Items)
			},
		},
		{
			name:  "subgraph",
			tasks: 4,
			build: func(t *testing.T) *graph.Compiled[tgState] {
				inner := tgNew()
				inner.AddNode("x", tgLogNode("x"))
				inner.AddNode("y", func(ctx context.Context, s tgState) (graph.Update[tgState], error) {
					graph.Emit(ctx, "from y")
					return graph.Writes(tgLog.Add("y"), tgN.Set(s.N+10)), nil
				})
				inner.AddSequence(graph.Start, "x", "y", graph.End)
				g := tgNew()
				g.AddNode("before", tgLogNode("before"))
				g.AddSubgraph("sub", tgCompile(t, inner))
				g.AddNode("sibling", tgLogNode("sibling"))
				g.AddNode("after", tgLogNode("after"))
				g.AddEdge(graph.Start, "before")
				g.AddEdge("before", "sub")
				g.AddEdge("before", "sibling")
				g.AddJoin([]string{"sub", "sibling"}, "after")
				g.AddEdge("after", graph.End)
				return tgCompile(t, g)
			},
			in: tgState{N: 1},
			check: func(t *testing.T, out tgState) {
				assert.Equal(t, []string{"before", "x", "y", "sibling", "after"}, out.Log)
				assert.Equal(t, 11, out.N)
			},
		},
	}
}

func TestSameStateAsInProcess(t *testing.T) {
	for _, tc := range sameCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, err := tc.build(t).Invoke(context.Background(), tc.in)
			require.NoError(t, err)
			tc.check(t, want)

			g := newGraph(t, "same", tc.build(t), temporalgraph.Options[tgState]{})
			env := newEnv(t)
			g.Register(env)
			var activities atomic.Int32
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == g.ActivityName() {
					activities.Add(1)
				}
			})
			got, err := execute(t, env, g, temporalgraph.Input[tgState]{State: tc.in})
			require.NoError(t, err)
			assert.Equal(t, want, got, "the workflow ends in another state than Invoke")
			assert.Equal(t, int32(tc.tasks), activities.Load(), "each task runs as one activity")
		})
	}
}

func TestRecursionLimit(t *testing.T) {
	build := func(opts ...graph.Option) *graph.Compiled[tgState] {
		g := tgNew()
		g.AddNode("loop", func(_ context.Context, s tgState) (graph.Update[tgState], error) {
			return graph.Writes(tgN.Set(s.N + 1)), nil
		})
		g.AddEdge(graph.Start, "loop")
		g.AddConditional("loop", func(tgState) graph.Route { return graph.Goto("loop") }, "loop")
		return tgCompile(t, g, opts...)
	}
	_, err := build().Invoke(context.Background(), tgState{}, graph.RecursionLimit(4))
	require.ErrorIs(t, err, graph.ErrRecursionLimit)

	for name, tc := range map[string]struct {
		c     *graph.Compiled[tgState]
		in    temporalgraph.Input[tgState]
		limit int
	}{
		"Input.RecursionLimit":     {c: build(), in: temporalgraph.Input[tgState]{RecursionLimit: 4}, limit: 4},
		"graph.WithRecursionLimit": {c: build(graph.WithRecursionLimit(3)), limit: 3},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGraph(t, "loop", tc.c, temporalgraph.Options[tgState]{})
			_, err := runOnTemporal(t, g, tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("recursion limit of %d steps", tc.limit))
			assert.Contains(t, err.Error(), "loop")
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			assert.Equal(t, "GraphError", app.Type())
			assert.True(t, app.NonRetryable(), "a graph's failure is final")
		})
	}
}

// ownResult is what ownWorkflow returns: the state Run returned, and its
// error as text.
type ownResult struct {
	State tgState `json:"state"`
	Err   string  `json:"error,omitempty"`
}

// Run inside a workflow of one's own: the workflow registered alone, the
// tasks with RegisterTasks. A failed step's finished tasks' writes are
// kept in the state Run returns.
func TestRunInOwnWorkflow(t *testing.T) {
	build := func(bad bool) *graph.Compiled[tgState] {
		g := tgNew()
		g.AddNode("first", tgLogNode("first"))
		g.AddNode("fine", tgLogNode("fine"))
		g.AddNode("other", func(context.Context, tgState) (graph.Update[tgState], error) {
			if bad {
				return graph.Update[tgState]{}, errBoom
			}
			return graph.Writes(tgLog.Add("other")), nil
		})
		g.AddNode("last", tgLogNode("last"))
		g.AddEdge(graph.Start, "first")
		g.AddEdge("first", "fine")
		g.AddEdge("first", "other")
		g.AddJoin([]string{"fine", "other"}, "last")
		g.AddEdge("last", graph.End)
		return tgCompile(t, g)
	}
	for _, tc := range []struct {
		name    string
		bad     bool
		wantLog []string
		wantErr string
	}{
		{name: "a run that succeeds", wantLog: []string{"first", "fine", "other", "last"}},
		{name: "a run that fails", bad: true, wantLog: []string{"first", "fine"}, wantErr: `node "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGraph(t, "own", build(tc.bad), temporalgraph.Options[tgState]{})
			env := newEnv(t)
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in temporalgraph.Input[tgState]) (ownResult, error) {
				s, err := g.Run(ctx, in)
				r := ownResult{State: s}
				if err != nil {
					r.Err = err.Error()
				}
				return r, nil
			}, workflow.RegisterOptions{Name: "mine"})
			g.RegisterTasks(env)
			env.ExecuteWorkflow("mine", temporalgraph.Input[tgState]{})
			require.NoError(t, env.GetWorkflowError())
			var r ownResult
			require.NoError(t, env.GetWorkflowResult(&r))
			assert.Equal(t, tc.wantLog, r.State.Log)
			if tc.wantErr == "" {
				assert.Empty(t, r.Err)
			} else {
				assert.Contains(t, r.Err, tc.wantErr)
			}
		})
	}
}
