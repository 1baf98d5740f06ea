package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// rmState is the state of the TaskRunner tests. It has a field of each kind
// and survives JSON whole, as a remote run needs.
type rmState struct {
	Log    []string
	N      int
	Items  []string
	Total  int
	Counts map[string]int
}

var (
	rmLog    = graph.Append(func(s *rmState) *[]string { return &s.Log })
	rmN      = graph.Value(func(s *rmState) *int { return &s.N })
	rmItems  = graph.Append(func(s *rmState) *[]string { return &s.Items })
	rmTotal  = graph.Reduce(func(s *rmState) *int { return &s.Total }, func(cur, upd int) int { return cur + upd })
	rmCounts = graph.Reduce(func(s *rmState) *map[string]int { return &s.Counts }, func(cur, upd map[string]int) map[string]int {
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

func rmNew() *graph.Graph[rmState] { return graph.New[rmState](rmLog, rmN, rmItems, rmTotal, rmCounts) }

func rmLogNode(name string) graph.NodeFunc[rmState] {
	return func(context.Context, rmState) (graph.Update[rmState], error) {
		return graph.Writes(rmLog.Add(name)), nil
	}
}

func rmCompile(t *testing.T, g *graph.Graph[rmState], opts ...graph.Option) *graph.Compiled[rmState] {
	t.Helper()
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
}

// rmJob is a Send payload of a struct type, to see it cross JSON.
type rmJob struct {
	Name   string
	Weight int
}

// loopback is a TaskRunner that does in this process what a worker would do
// elsewhere: each task of a step runs on its own goroutine through
// Compiled.RunTask, again at once when the outcome says Retry, and again
// with the answers when it stopped at interrupts. The tasks' results come
// back in task order.
type loopback[S any] struct {
	c       *graph.Compiled[S] // the worker's graph, compiled from the same code
	scope   string
	answer  func(graph.PendingInterrupt) any // nil: an interrupt fails the task
	observe func(graph.Event[S])             // passed to RunTask

	steps atomic.Int32 // RunTasks calls
	calls atomic.Int32 // RunTask calls
	mu    sync.Mutex
	seen  []graph.RemoteStep
}

func (l *loopback[S]) RunTasks(ctx context.Context, step graph.RemoteStep) ([]graph.RemoteResult, error) {
	l.steps.Add(1)
	l.mu.Lock()
	l.seen = append(l.seen, step)
	l.mu.Unlock()
	res := make([]graph.RemoteResult, len(step.Tasks))
	var wg sync.WaitGroup
	for k, task := range step.Tasks {
		wg.Go(func() { res[k] = l.run(ctx, step, task) })
	}
	wg.Wait()
	return res, nil
}

func (l *loopback[S]) run(ctx context.Context, step graph.RemoteStep, task graph.RemoteTask) graph.RemoteResult {
	in := graph.TaskInput{Step: step.Step, State: step.State, Task: task, Attempt: 1, Scope: l.scope}
	for rounds := 0; ; {
		l.calls.Add(1)
		out, err := l.c.RunTask(ctx, in, l.observe)
		switch {
		case err != nil && out.Retry:
			if in.Attempt >= 100 {
				return graph.RemoteResult{Err: fmt.Errorf("loopback: task %d (%s) still asks for a retry after %d attempts", task.Index, task.Node, in.Attempt)}
			}
			in.Attempt++
		case err != nil:
			return graph.RemoteResult{Err: err, Attempts: in.Attempt}
		case len(out.Interrupts) > 0:
			if rounds++; l.answer == nil || rounds > 10 {
				return graph.RemoteResult{Err: fmt.Errorf("loopback: task %d (%s) waits on %d interrupts, which this runner does not answer", task.Index, task.Node, len(out.Interrupts))}
			}
			for _, pi := range out.Interrupts {
				v, err := json.Marshal(l.answer(pi))
				if err != nil {
					return graph.RemoteResult{Err: err}
				}
				in.Answers = append(in.Answers, graph.AnswerRecord{ID: pi.ID, Value: v})
			}
		default:
			return graph.RemoteResult{Update: out.Update, Attempts: in.Attempt}
		}
	}
}

// errShape is what an error says to a caller that branches on it, for
// comparing the in-process and the remote run's errors.
func errShape(err error) string {
	if err == nil {
		return "ok"
	}
	parts := []string{fmt.Sprintf("%T", err)}
	var ne *graph.NodeError
	if errors.As(err, &ne) {
		parts = append(parts, fmt.Sprintf("node %q step %d", ne.Node, ne.Step))
	}
	for _, k := range []struct {
		name   string
		target error
	}{
		{"recursion", graph.ErrRecursionLimit}, {"timeout", graph.ErrTimeout}, {"boom", errBoom},
		{"conflict", graph.ErrConflict}, {"cancelled", context.Canceled}, {"interrupted", graph.ErrInterrupted},
	} {
		if errors.Is(err, k.target) {
			parts = append(parts, k.name)
		}
	}
	var pe *graph.PanicError
	if errors.As(err, &pe) {
		parts = append(parts, fmt.Sprintf("panic %v", pe.Value))
	}
	var re *graph.RecursionError
	if errors.As(err, &re) {
		parts = append(parts, fmt.Sprintf("limit %d next %v", re.Limit, re.Next))
	}
	var ce *graph.ConflictError
	if errors.As(err, &ce) {
		parts = append(parts, fmt.Sprintf("conflict %s %v", ce.Field, ce.Nodes))
	}
	var ro *graph.RouteError
	if errors.As(err, &ro) {
		parts = append(parts, fmt.Sprintf("route %s→%s", ro.From, ro.To))
	}
	return strings.Join(parts, ", ")
}

// rmCase is a graph run twice on the same input: in-process and through a
// loopback TaskRunner. build is called once for the in-process run, once
// for the engine of the remote run and once for its worker, so that each
// gets its own counters and channels.
type rmCase struct {
	name  string
	build func(t *testing.T) *graph.Compiled[rmState]
	in    rmState
	opts  []graph.RunOption
	// check holds for both runs.
	check func(t *testing.T, out rmState, err error)
	// otherMessage: the errors' messages differ, for the reason given.
	otherMessage string
}

func rmCases() []rmCase {
	return []rmCase{
		{
			name: "sequence",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				for _, n := range []string{"a", "b", "c"} {
					g.AddNode(n, rmLogNode(n))
				}
				g.AddNode("count", func(_ context.Context, s rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmN.Set(len(s.Log))), nil
				})
				g.AddSequence(graph.Start, "a", "b", "c", "count", graph.End)
				return rmCompile(t, g)
			},
			in: rmState{Log: []string{"input"}},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"input", "a", "b", "c"}, out.Log)
				assert.Equal(t, 4, out.N)
			},
		},
		{
			// Task i waits until task i+1 has finished, so the tasks finish
			// in reverse order, in both runs; each records its rank. The
			// merge is in task order all the same.
			name: "Send fan-out finishing in reverse order",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				const width = 6
				done := make([]chan struct{}, width)
				for i := range done {
					done[i] = make(chan struct{})
				}
				var rank atomic.Int32
				g := rmNew()
				g.AddNode("split", rmLogNode("split"))
				graph.AddTask(g, "work", func(ctx context.Context, i int) (graph.Update[rmState], error) {
					if i+1 < width {
						select {
						case <-done[i+1]:
						case <-time.After(10 * time.Second):
							return graph.Update[rmState]{}, fmt.Errorf("task %d: task %d never finished: the tasks do not run in parallel", i, i+1)
						}
					}
					r := rank.Add(1)
					close(done[i])
					return graph.Writes(rmItems.Add(fmt.Sprint(i)), rmLog.Add(fmt.Sprintf("%d finished #%d", i, r))), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "work", func(rmState) []int { return []int{0, 1, 2, 3, 4, 5} })
				g.AddEdge("work", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"0", "1", "2", "3", "4", "5"}, out.Items)
				assert.Equal(t, []string{"split", "0 finished #6", "1 finished #5", "2 finished #4", "3 finished #3", "4 finished #2", "5 finished #1"}, out.Log)
			},
		},
		{
			name: "conditional loop with a counter",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("inc", func(_ context.Context, s rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmN.Set(s.N+1), rmLog.Add(fmt.Sprint("inc ", s.N))), nil
				})
				g.AddNode("done", rmLogNode("done"))
				g.AddEdge(graph.Start, "inc")
				g.AddConditional("inc", func(s rmState) graph.Route {
					if s.N < 5 {
						return graph.Goto("inc")
					}
					return graph.Goto("done")
				}, "inc", "done")
				g.AddEdge("done", graph.End)
				return rmCompile(t, g)
			},
			in: rmState{N: 1},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, 5, out.N)
				assert.Equal(t, []string{"inc 1", "inc 2", "inc 3", "inc 4", "done"}, out.Log)
			},
		},
		{
			name: "waiting edge",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					g.AddNode(n, rmLogNode(n))
				}
				g.AddEdge(graph.Start, "a")
				g.AddSequence("a", "b", "c")
				g.AddEdge("a", "d")
				g.AddJoin([]string{"c", "d"}, "e")
				g.AddEdge("e", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"a", "b", "d", "c", "e"}, out.Log)
			},
		},
		{
			name: "Goto and Send commands",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("decide", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmLog.Add("decide")).Goto("after").
						Send(graph.Send{Node: "work", Arg: rmJob{Name: "z", Weight: 2}}, graph.Send{Node: "work", Arg: rmJob{Name: "y", Weight: 3}}), nil
				}, graph.Destinations("after", "work"))
				g.AddNode("after", rmLogNode("after"))
				graph.AddTask(g, "work", func(_ context.Context, j rmJob) (graph.Update[rmState], error) {
					return graph.Writes(rmItems.Add(fmt.Sprintf("%s:%d", j.Name, j.Weight)), rmTotal.Merge(j.Weight)), nil
				})
				g.AddEdge(graph.Start, "decide")
				g.AddEdge("after", graph.End)
				g.AddEdge("work", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"decide", "after"}, out.Log)
				assert.Equal(t, []string{"z:2", "y:3"}, out.Items)
				assert.Equal(t, 5, out.Total)
			},
		},
		{
			name: "Reduce fields",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("split", rmLogNode("split"))
				graph.AddTask(g, "weigh", func(_ context.Context, i int) (graph.Update[rmState], error) {
					parity := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
					return graph.Writes(rmTotal.Merge(i), rmCounts.Merge(map[string]int{parity: 1})), nil
				})
				g.AddEdge(graph.Start, "split")
				graph.AddFanOut(g, "split", "weigh", func(rmState) []int { return []int{1, 2, 3, 4, 5} })
				g.AddEdge("weigh", graph.End)
				return rmCompile(t, g)
			},
			in: rmState{Total: 100, Counts: map[string]int{"seed": 1}},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, 115, out.Total)
				assert.Equal(t, map[string]int{"seed": 1, "even": 2, "odd": 3}, out.Counts)
			},
		},
		{
			name: "a Set wins over the step's Appends",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("add1", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmItems.Add("one")), nil
				})
				g.AddNode("reset", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmItems.Set([]string{"fresh"}), rmItems.Add("by reset")), nil
				})
				g.AddNode("add2", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmItems.Add("two")), nil
				})
				for _, n := range []string{"add1", "reset", "add2"} {
					g.AddEdge(graph.Start, n)
					g.AddEdge(n, graph.End)
				}
				return rmCompile(t, g)
			},
			in: rmState{Items: []string{"old"}},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"fresh", "by reset"}, out.Items)
			},
		},
		{
			name: "subgraph",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				inner := rmNew()
				inner.AddNode("x", rmLogNode("x"))
				inner.AddNode("y", func(ctx context.Context, s rmState) (graph.Update[rmState], error) {
					graph.Emit(ctx, "from y")
					return graph.Writes(rmLog.Add("y"), rmN.Set(s.N+10)), nil
				})
				inner.AddSequence(graph.Start, "x", "y", graph.End)
				g := rmNew()
				g.AddNode("before", rmLogNode("before"))
				g.AddSubgraph("sub", rmCompile(t, inner))
				g.AddNode("sibling", rmLogNode("sibling"))
				g.AddNode("after", rmLogNode("after"))
				g.AddEdge(graph.Start, "before")
				g.AddEdge("before", "sub")
				g.AddEdge("before", "sibling")
				g.AddJoin([]string{"sub", "sibling"}, "after")
				g.AddEdge("after", graph.End)
				return rmCompile(t, g)
			},
			in: rmState{N: 1},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"before", "x", "y", "sibling", "after"}, out.Log)
				assert.Equal(t, 11, out.N)
			},
		},
		{
			name: "recursion limit",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("loop", func(_ context.Context, s rmState) (graph.Update[rmState], error) {
					return graph.Writes(rmN.Set(s.N + 1)), nil
				})
				g.AddEdge(graph.Start, "loop")
				g.AddConditional("loop", func(rmState) graph.Route { return graph.Goto("loop") }, "loop")
				return rmCompile(t, g)
			},
			opts: []graph.RunOption{graph.RecursionLimit(4)},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, graph.ErrRecursionLimit)
				assert.Equal(t, 4, out.N, "the state of the last completed step comes back with the error")
			},
		},
		{
			name: "a node fails",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("first", rmLogNode("first"))
				g.AddNode("fine", func(context.Context, rmState) (graph.Update[rmState], error) {
					time.Sleep(20 * time.Millisecond)
					return graph.Writes(rmLog.Add("fine")), nil
				})
				g.AddNode("bad", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Update[rmState]{}, errBoom
				})
				g.AddEdge(graph.Start, "first")
				g.AddEdge("first", "fine")
				g.AddEdge("first", "bad")
				g.AddEdge("fine", graph.End)
				g.AddEdge("bad", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, errBoom)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, "bad", ne.Node)
				assert.Equal(t, 2, ne.Step)
				assert.Equal(t, []string{"first"}, out.Log)
			},
		},
		{
			name: "a node of a subgraph fails",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				inner := rmNew()
				inner.AddNode("x", rmLogNode("x"))
				inner.AddNode("y", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Update[rmState]{}, errBoom
				})
				inner.AddSequence(graph.Start, "x", "y", graph.End)
				g := rmNew()
				g.AddNode("before", rmLogNode("before"))
				g.AddSubgraph("sub", rmCompile(t, inner))
				g.AddSequence(graph.Start, "before", "sub", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, errBoom)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, "sub", ne.Node, "the outermost NodeError names the parent's node")
				assert.Equal(t, []string{"before"}, out.Log)
			},
			otherMessage: `the inner node is "y" in a plain in-process Invoke and "sub/y" inside a task's context, as with a stream or a thread`,
		},
		{
			name: "a retried subgraph succeeds on its second attempt",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				var calls atomic.Int32
				inner := rmNew()
				inner.AddNode("y", func(context.Context, rmState) (graph.Update[rmState], error) {
					if calls.Add(1) == 1 {
						return graph.Update[rmState]{}, errBoom
					}
					return graph.Writes(rmLog.Add("y")), nil
				})
				inner.AddSequence(graph.Start, "y", graph.End)
				g := rmNew()
				g.AddSubgraph("sub", rmCompile(t, inner), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: graph.RetryImmediately}))
				g.AddSequence(graph.Start, "sub", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"y"}, out.Log)
			},
		},
		{
			name: "a retried node succeeds on its third attempt",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				var calls atomic.Int32
				g := rmNew()
				g.AddNode("flaky", func(context.Context, rmState) (graph.Update[rmState], error) {
					if n := calls.Add(1); n < 3 {
						return graph.Update[rmState]{}, fmt.Errorf("transient %d", n)
					}
					return graph.Writes(rmLog.Add(fmt.Sprint("ok after ", calls.Load()))), nil
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: graph.RetryImmediately}))
				g.AddSequence(graph.Start, "flaky", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"ok after 3"}, out.Log)
			},
		},
		{
			name: "a retried node runs out of attempts",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("flaky", func(context.Context, rmState) (graph.Update[rmState], error) {
					return graph.Update[rmState]{}, errBoom
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: graph.RetryImmediately}))
				g.AddSequence(graph.Start, "flaky", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, errBoom)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, 2, ne.Attempts)
			},
		},
		{
			name: "a node panics",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("p", func(context.Context, rmState) (graph.Update[rmState], error) { panic("kaboom") },
					graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: graph.RetryImmediately}))
				g.AddSequence(graph.Start, "p", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				var pe *graph.PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "kaboom", pe.Value)
			},
		},
		{
			name: "a node times out",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				g.AddNode("slow", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
					select {
					case <-ctx.Done():
						return graph.Update[rmState]{}, ctx.Err()
					case <-time.After(5 * time.Second):
						return graph.Writes(rmLog.Add("slow")), nil
					}
				}, graph.WithTimeout(20*time.Millisecond))
				g.AddSequence(graph.Start, "slow", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, graph.ErrTimeout)
				require.ErrorIs(t, err, context.DeadlineExceeded)
			},
		},
		{
			name: "two tasks set one field",
			build: func(t *testing.T) *graph.Compiled[rmState] {
				g := rmNew()
				for i, n := range []string{"left", "right"} {
					g.AddNode(n, func(context.Context, rmState) (graph.Update[rmState], error) { return graph.Writes(rmN.Set(i)), nil })
					g.AddEdge(graph.Start, n)
					g.AddEdge(n, graph.End)
				}
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out rmState, err error) {
				require.ErrorIs(t, err, graph.ErrConflict)
			},
		},
	}
}

func TestRemoteRunGivesTheSameStateAsInProcess(t *testing.T) {
	for _, tc := range rmCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, wantErr := tc.build(t).Invoke(ctx, tc.in, tc.opts...)
			tc.check(t, want, wantErr)

			engine := tc.build(t)
			lb := &loopback[rmState]{c: tc.build(t), scope: "run-1"}
			got, gotErr := engine.Invoke(ctx, tc.in, append(slices.Clip(tc.opts), graph.WithTaskRunner(lb))...)
			tc.check(t, got, gotErr)

			assert.Positive(t, lb.calls.Load(), "the tasks ran through the TaskRunner")
			assert.True(t, reflect.DeepEqual(want, got), "final states differ:\nin-process: %#v\nremote:     %#v", want, got)
			assert.Equal(t, errShape(wantErr), errShape(gotErr))
			var pe *graph.PanicError
			if wantErr != nil && !errors.As(wantErr, &pe) && tc.otherMessage == "" { // a panic's message holds its stack
				assert.Equal(t, wantErr.Error(), gotErr.Error())
			}
		})
	}
}

// rmAsk fans out to a, b and c; b and c ask a question and add the answer.
func rmAsk(t *testing.T, opts ...graph.Option) *graph.Compiled[rmState] {
	g := rmNew()
	g.AddNode("split", rmLogNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[rmState], error) {
		if item == "a" {
			return graph.Writes(rmItems.Add(item)), nil
		}
		ans, err := graph.Interrupt[string](ctx, "what about "+item+"?")
		if err != nil {
			return graph.Update[rmState]{}, err
		}
		n, err := graph.Interrupt[int](ctx, "how many "+item+"?")
		if err != nil {
			return graph.Update[rmState]{}, err
		}
		return graph.Writes(rmItems.Add(fmt.Sprintf("%s=%s×%d", item, ans, n))), nil
	})
	g.AddNode("join", rmLogNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(rmState) []string { return []string{"a", "b", "c"} })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return rmCompile(t, g, opts...)
}

func TestRemoteInterruptsAnsweredByTheRunnerGiveTheStateOfResume(t *testing.T) {
	answer := func(pi graph.PendingInterrupt) any {
		q, err := graph.PayloadOf[string](pi)
		if err != nil {
			panic(err)
		}
		if strings.HasPrefix(q, "how many") {
			return len(q)
		}
		return "yes to " + strings.TrimSuffix(q, "?")
	}
	ctx := context.Background()

	// In-process: pause, answer, resume, until the run ends.
	local := rmAsk(t, graph.WithCheckpointer(graph.NewMemorySaver()))
	want, err := local.Invoke(ctx, rmState{}, graph.Thread("t"))
	for rounds := 0; errors.Is(err, graph.ErrInterrupted); rounds++ {
		require.Less(t, rounds, 5)
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		var opts []graph.RunOption
		for _, pi := range ie.Interrupts {
			opts = append(opts, graph.AnswerFor(pi.ID, answer(pi)))
		}
		want, err = local.Resume(ctx, append(opts, graph.Thread("t"))...)
	}
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b=yes to what about b×11", "c=yes to what about c×11"}, want.Items)

	// Remote: the runner answers; the engine never sees the interrupts.
	lb := &loopback[rmState]{c: rmAsk(t), scope: "run-7", answer: answer}
	got, err := rmAsk(t).Invoke(ctx, rmState{}, graph.WithTaskRunner(lb))
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(want, got), "in-process %#v\nremote %#v", want, got)
	// a: once; b and c: asked, asked again, answered.
	assert.Equal(t, int32(1+1+3+3+1), lb.calls.Load())
}

func TestRemoteStepDescribesTheTasks(t *testing.T) {
	g := rmNew()
	g.AddNode("split", rmLogNode("split"))
	graph.AddTask(g, "work", func(_ context.Context, j rmJob) (graph.Update[rmState], error) {
		return graph.Writes(rmItems.Add(j.Name)), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 4}), graph.WithTimeout(time.Minute))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(rmState) []rmJob { return []rmJob{{"p", 1}, {"q", 2}} })
	g.AddEdge("work", graph.End)
	lb := &loopback[rmState]{c: rmCompile(t, g)}
	out, err := rmCompile(t, g).Invoke(context.Background(), rmState{N: 9}, graph.WithTaskRunner(lb))
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "q"}, out.Items)

	require.Len(t, lb.seen, 2)
	first := lb.seen[0]
	assert.Equal(t, 1, first.Step)
	var st rmState
	require.NoError(t, json.Unmarshal(first.State, &st))
	assert.Equal(t, rmState{N: 9}, st, "the state the step reads")
	require.Len(t, first.Tasks, 1)
	assert.Equal(t, "split", first.Tasks[0].Node)
	assert.Nil(t, first.Tasks[0].Arg)
	assert.Nil(t, first.Tasks[0].ArgJSON, "a state node has no payload")
	assert.Nil(t, first.Tasks[0].Retry)
	assert.Zero(t, first.Tasks[0].Timeout)

	second := lb.seen[1]
	assert.Equal(t, 2, second.Step)
	require.NoError(t, json.Unmarshal(second.State, &st))
	assert.Equal(t, []string{"split"}, st.Log)
	require.Len(t, second.Tasks, 2)
	for i, want := range []rmJob{{"p", 1}, {"q", 2}} {
		task := second.Tasks[i]
		assert.Equal(t, "work", task.Node)
		assert.Equal(t, i, task.Index)
		assert.Equal(t, want, task.Arg)
		assert.JSONEq(t, fmt.Sprintf(`{"Name":%q,"Weight":%d}`, want.Name, want.Weight), string(task.ArgJSON))
		require.NotNil(t, task.Retry)
		assert.Equal(t, 4, task.Retry.MaxAttempts)
		assert.Equal(t, 500*time.Millisecond, task.Retry.InitialInterval, "the policy comes with its defaults filled in")
		assert.NotNil(t, task.Retry.RetryOn)
		assert.Equal(t, time.Minute, task.Timeout)
	}
}

// brokenRunner returns what it is told to instead of running the tasks.
type brokenRunner struct {
	res []graph.RemoteResult
	err error
}

func (b brokenRunner) RunTasks(context.Context, graph.RemoteStep) ([]graph.RemoteResult, error) {
	return b.res, b.err
}

func TestTaskRunnerFailures(t *testing.T) {
	c := rmCompile(t, rmNew().AddNode("a", rmLogNode("a")).AddSequence(graph.Start, "a", graph.End))
	ctx := context.Background()

	t.Run("the runner fails", func(t *testing.T) {
		broke := errors.New("the queue is gone")
		_, err := c.Invoke(ctx, rmState{}, graph.WithTaskRunner(brokenRunner{err: broke}))
		require.ErrorIs(t, err, broke)
		assert.Contains(t, err.Error(), "step 1")
		var ne *graph.NodeError
		assert.False(t, errors.As(err, &ne), "a broken runner is not a node's failure")
	})
	t.Run("too few results", func(t *testing.T) {
		_, err := c.Invoke(ctx, rmState{}, graph.WithTaskRunner(brokenRunner{}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "returned 0 results for 1 tasks")
	})
	t.Run("a task's own error names its node", func(t *testing.T) {
		_, err := c.Invoke(ctx, rmState{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Err: errBoom, Attempts: 2}}}))
		require.ErrorIs(t, err, errBoom)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "a", ne.Node)
		assert.Equal(t, 1, ne.Step)
		assert.Equal(t, 2, ne.Attempts)
	})
	t.Run("an update that does not decode", func(t *testing.T) {
		_, err := c.Invoke(ctx, rmState{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Update: json.RawMessage(`{"writes":[{"field":"Nope","op":"add","value":[]}]}`)}}}))
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "a", ne.Node)
		assert.Contains(t, err.Error(), `unknown field "Nope"`)
	})
	t.Run("the run is cancelled", func(t *testing.T) {
		g := rmNew()
		g.AddNode("wait", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
			<-ctx.Done()
			return graph.Update[rmState]{}, ctx.Err()
		})
		g.AddSequence(graph.Start, "wait", graph.End)
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		lb := &loopback[rmState]{c: rmCompile(t, g)}
		_, err := rmCompile(t, g).Invoke(ctx, rmState{}, graph.WithTaskRunner(lb))
		require.ErrorIs(t, err, context.Canceled)
		var ne *graph.NodeError
		assert.False(t, errors.As(err, &ne), "cancellation is not a node failure: %v", err)
	})
}

// rmQuestion is an interrupt payload.
type rmQuestion struct {
	Text string
	N    int
}

// rmWorker is a graph whose nodes exercise RunTask one by one; it is never
// invoked.
func rmWorker(t *testing.T) *graph.Compiled[rmState] {
	g := rmNew()
	g.AddNode("ok", func(_ context.Context, s rmState) (graph.Update[rmState], error) {
		return graph.Writes(rmLog.Add(fmt.Sprint("ok ", s.N))), nil
	})
	g.AddNode("flaky", func(context.Context, rmState) (graph.Update[rmState], error) {
		return graph.Update[rmState]{}, errBoom
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("permanent", func(context.Context, rmState) (graph.Update[rmState], error) {
		return graph.Update[rmState]{}, graph.Permanent(errBoom)
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("panics", func(context.Context, rmState) (graph.Update[rmState], error) { panic("kaboom") },
		graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("slow", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
		<-ctx.Done()
		return graph.Update[rmState]{}, ctx.Err()
	}, graph.WithTimeout(10*time.Millisecond))
	g.AddNode("ask", func(ctx context.Context, s rmState) (graph.Update[rmState], error) {
		n, err := graph.Interrupt[int](ctx, rmQuestion{Text: "how many?", N: s.N})
		if err != nil {
			return graph.Update[rmState]{}, err
		}
		return graph.Writes(rmN.Set(n)), nil
	})
	g.AddNode("emits", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
		graph.Emit(ctx, "a")
		graph.Emit(ctx, "b")
		return graph.Writes(rmLog.Add(fmt.Sprint("streaming=", graph.Streaming(ctx)))), nil
	})
	inner := rmNew()
	inner.AddNode("y", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
		graph.Emit(ctx, "from y")
		return graph.Writes(rmLog.Add("y")), nil
	})
	inner.AddSequence(graph.Start, "y", graph.End)
	g.AddSubgraph("sub", rmCompile(t, inner))
	for _, n := range []string{"ok", "flaky", "permanent", "panics", "slow", "ask", "emits", "sub"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	graph.AddTask(g, "work", func(_ context.Context, j rmJob) (graph.Update[rmState], error) {
		return graph.Writes(rmItems.Add(fmt.Sprintf("%s:%d", j.Name, j.Weight))), nil
	})
	graph.AddFanOut(g, "ok", "work", func(rmState) []rmJob { return nil })
	g.AddEdge("work", graph.End)
	return rmCompile(t, g)
}

// rmInput is attempt 1 of task 1 of step 3 of run-A, on a state with N 4.
func rmInput(t *testing.T, node string) graph.TaskInput {
	state, err := json.Marshal(rmState{N: 4, Log: []string{"before"}})
	require.NoError(t, err)
	return graph.TaskInput{Step: 3, State: state, Task: graph.RemoteTask{Node: node, Index: 1}, Attempt: 1, Scope: "run-A"}
}

// rmUpdate decodes an update as the engine does, by merging it as the
// only task of a one-node graph, and returns the state it makes.
func rmUpdate(t *testing.T, data json.RawMessage) rmState {
	t.Helper()
	require.NotEmpty(t, data)
	c := rmCompile(t, rmNew().AddNode("replay", func(context.Context, rmState) (graph.Update[rmState], error) {
		return graph.Update[rmState]{}, nil
	}).AddSequence(graph.Start, "replay", graph.End))
	out, err := c.Invoke(context.Background(), rmState{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Update: data}}}))
	require.NoError(t, err)
	return out
}

func TestRunTask(t *testing.T) {
	c := rmWorker(t)
	ctx := context.Background()

	t.Run("an update", func(t *testing.T) {
		out, err := c.RunTask(ctx, rmInput(t, "ok"), nil)
		require.NoError(t, err)
		assert.False(t, out.Retry)
		assert.Empty(t, out.Interrupts)
		assert.JSONEq(t, `{"writes":[{"field":"Log","op":"add","value":["ok 4"]}]}`, string(out.Update))
		assert.Equal(t, []string{"ok 4"}, rmUpdate(t, out.Update).Log)
	})
	t.Run("a Send task decodes its payload", func(t *testing.T) {
		in := rmInput(t, "work")
		in.Task.ArgJSON = json.RawMessage(`{"Name":"w","Weight":7}`)
		out, err := c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"w:7"}, rmUpdate(t, out.Update).Items)

		in.Task.ArgJSON = json.RawMessage(`"not a job"`)
		_, err = c.RunTask(ctx, in, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "payload")
	})
	t.Run("an unknown node", func(t *testing.T) {
		_, err := c.RunTask(ctx, rmInput(t, "nope"), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `no node "nope"`)
		assert.Contains(t, err.Error(), "another version of the graph")
	})
	t.Run("a state that does not decode", func(t *testing.T) {
		for _, state := range []string{`{"N":"four"}`, `{`, ``} {
			in := rmInput(t, "ok")
			in.State = json.RawMessage(state)
			_, err := c.RunTask(ctx, in, nil)
			require.Error(t, err, "state %q", state)
			assert.Contains(t, err.Error(), "decoding the state of step 3")
		}
	})
	t.Run("retries as the policy allows", func(t *testing.T) {
		for attempt, wantRetry := range map[int]bool{1: true, 2: true, 3: false} {
			in := rmInput(t, "flaky")
			in.Attempt = attempt
			out, err := c.RunTask(ctx, in, nil)
			require.ErrorIs(t, err, errBoom)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "flaky", ne.Node)
			assert.Equal(t, 3, ne.Step)
			assert.Equal(t, attempt, ne.Attempts)
			assert.Equal(t, wantRetry, out.Retry, "attempt %d", attempt)
			assert.Nil(t, out.Update)
		}
	})
	t.Run("a permanent error is not retried", func(t *testing.T) {
		out, err := c.RunTask(ctx, rmInput(t, "permanent"), nil)
		require.ErrorIs(t, err, errBoom)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.False(t, out.Retry)
	})
	t.Run("a panic", func(t *testing.T) {
		out, err := c.RunTask(ctx, rmInput(t, "panics"), nil)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "panics", ne.Node)
		var pe *graph.PanicError
		require.ErrorAs(t, ne.Err, &pe)
		assert.Equal(t, "kaboom", pe.Value)
		assert.Contains(t, string(pe.Stack), "remote_test.go")
		assert.False(t, out.Retry)
	})
	t.Run("a timeout", func(t *testing.T) {
		start := time.Now()
		out, err := c.RunTask(ctx, rmInput(t, "slow"), nil)
		assert.Less(t, time.Since(start), 2*time.Second)
		require.ErrorIs(t, err, graph.ErrTimeout)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "slow", ne.Node)
		assert.False(t, out.Retry, "the node has no retry policy")
	})
	t.Run("an interrupt, then its answer", func(t *testing.T) {
		in := rmInput(t, "ask")
		out, err := c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		assert.Nil(t, out.Update)
		require.Len(t, out.Interrupts, 1)
		pi := out.Interrupts[0]
		assert.Equal(t, graph.InterruptNode, pi.Kind)
		assert.Equal(t, "ask", pi.Node)
		assert.Equal(t, 1, pi.Task)
		assert.Equal(t, 3, pi.Step)
		assert.NotEmpty(t, pi.ID)
		q, err := graph.PayloadOf[rmQuestion](pi)
		require.NoError(t, err)
		assert.Equal(t, rmQuestion{Text: "how many?", N: 4}, q)

		// The same task of the same run asks under the same ID; another run,
		// step or task under another.
		again, err := c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		require.Len(t, again.Interrupts, 1)
		assert.Equal(t, pi.ID, again.Interrupts[0].ID)
		for _, change := range []func(*graph.TaskInput){
			func(in *graph.TaskInput) { in.Scope = "run-B" },
			func(in *graph.TaskInput) { in.Step = 4 },
			func(in *graph.TaskInput) { in.Task.Index = 2 },
		} {
			other := rmInput(t, "ask")
			change(&other)
			out, err := c.RunTask(ctx, other, nil)
			require.NoError(t, err)
			require.Len(t, out.Interrupts, 1)
			assert.NotEqual(t, pi.ID, out.Interrupts[0].ID)
		}

		in.Answers = []graph.AnswerRecord{{ID: pi.ID, Value: json.RawMessage(`7`)}}
		out, err = c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		assert.Empty(t, out.Interrupts)
		assert.Equal(t, 7, rmUpdate(t, out.Update).N)

		// An answer to another interrupt leaves this one waiting.
		in.Answers = []graph.AnswerRecord{{ID: "elsewhere", Value: json.RawMessage(`7`)}}
		out, err = c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		require.Len(t, out.Interrupts, 1)
		assert.Equal(t, pi.ID, out.Interrupts[0].ID)
	})
	t.Run("an answer of the wrong type", func(t *testing.T) {
		in := rmInput(t, "ask")
		out, err := c.RunTask(ctx, in, nil)
		require.NoError(t, err)
		require.Len(t, out.Interrupts, 1)
		in.Answers = []graph.AnswerRecord{{ID: out.Interrupts[0].ID, Value: json.RawMessage(`"lots"`)}}
		out, err = c.RunTask(ctx, in, nil)
		var ae *graph.AnswerError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "int", ae.Want)
		assert.Equal(t, in.Answers[0].ID, ae.ID)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "ask", ne.Node)
		assert.False(t, out.Retry)
		assert.Empty(t, out.Interrupts)
	})
	t.Run("events", func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		var end graph.Event[rmState]
		observe := func(ev graph.Event[rmState]) {
			mu.Lock()
			defer mu.Unlock()
			s := fmt.Sprintf("%s %d %s %d", ev.Kind, ev.Step, ev.Node, ev.Task)
			if ev.Kind == graph.EventCustom {
				s += fmt.Sprint(" ", ev.Value)
			}
			if ev.Kind == graph.EventTaskEnd {
				end = ev
			}
			events = append(events, s)
		}
		out, err := c.RunTask(ctx, rmInput(t, "emits"), observe)
		require.NoError(t, err)
		// RunTask returns after its last call of observe.
		assert.Equal(t, []string{"task_start 3 emits 1", "custom 3 emits 1 a", "custom 3 emits 1 b", "task_end 3 emits 1"}, events)
		require.NoError(t, end.Err)
		written, ok := rmLog.Written(end.Update)
		require.True(t, ok)
		assert.Equal(t, []string{"streaming=true"}, written)
		assert.Equal(t, []string{"streaming=true"}, rmUpdate(t, out.Update).Log)

		// Without observe nobody streams.
		out, err = c.RunTask(ctx, rmInput(t, "emits"), nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"streaming=false"}, rmUpdate(t, out.Update).Log)

		// A subgraph's Emit reaches observe under its path; a failure ends
		// with its error.
		events = nil
		_, err = c.RunTask(ctx, rmInput(t, "sub"), observe)
		require.NoError(t, err)
		assert.Equal(t, []string{"task_start 3 sub 1", "custom 1 sub/y 0 from y", "task_end 3 sub 1"}, events)
		events = nil
		_, runErr := c.RunTask(ctx, rmInput(t, "flaky"), observe)
		require.Error(t, runErr)
		assert.Equal(t, []string{"task_start 3 flaky 1", "task_end 3 flaky 1"}, events)
		assert.Equal(t, runErr, end.Err)
		assert.True(t, end.Update.Empty())
	})
}

func TestTaskRunnerRefusesStaticBreakpoints(t *testing.T) {
	g := rmNew()
	g.AddNode("a", rmLogNode("a"))
	g.AddNode("b", rmLogNode("b"))
	g.AddSequence(graph.Start, "a", "b", graph.End)
	for _, opt := range []graph.Option{graph.WithInterruptBefore("b"), graph.WithInterruptAfter("a")} {
		c := rmCompile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), opt)
		lb := &loopback[rmState]{c: c}
		ctx := context.Background()
		_, err := c.Invoke(ctx, rmState{}, graph.Thread("bp"), graph.WithTaskRunner(lb))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "WithInterruptBefore and WithInterruptAfter")
		assert.Contains(t, err.Error(), "TaskRunner")
		assert.Contains(t, err.Error(), "graph.Interrupt")
		for _, err := range c.Stream(ctx, rmState{}, graph.Thread("bp"), graph.WithTaskRunner(lb)) {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "TaskRunner")
		}
		_, err = c.Resume(ctx, graph.Thread("bp"), graph.WithTaskRunner(lb))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "TaskRunner")
		assert.Zero(t, lb.calls.Load(), "nothing ran")

		// Without a runner the breakpoint pauses as usual.
		_, err = c.Invoke(ctx, rmState{}, graph.Thread("bp"))
		require.ErrorIs(t, err, graph.ErrInterrupted)
	}
}

// rmStreamGraph is split → three work tasks → join, with Emits along the way.
func rmStreamGraph(t *testing.T) *graph.Compiled[rmState] {
	g := rmNew()
	g.AddNode("split", func(ctx context.Context, _ rmState) (graph.Update[rmState], error) {
		graph.Emit(ctx, "splitting")
		return graph.Writes(rmLog.Add("split")), nil
	})
	graph.AddTask(g, "work", func(_ context.Context, i int) (graph.Update[rmState], error) {
		time.Sleep(time.Duration(3-i) * 2 * time.Millisecond)
		return graph.Writes(rmItems.Add(fmt.Sprint(i)), rmTotal.Merge(i)), nil
	})
	g.AddNode("join", rmLogNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(rmState) []int { return []int{0, 1, 2} })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return rmCompile(t, g)
}

// rmStreamed is what a stream showed: the task starts in order, the task
// ends (sorted: in-process they come in completion order), the states of
// the steps, and the final state.
type rmStreamed struct {
	starts, ends []string
	steps        []rmState
	final        rmState
	ended        bool
}

func rmCollect(t *testing.T, c *graph.Compiled[rmState], opts ...graph.RunOption) rmStreamed {
	t.Helper()
	var s rmStreamed
	for ev, err := range c.Stream(context.Background(), rmState{}, opts...) {
		require.NoError(t, err)
		switch ev.Kind {
		case graph.EventTaskStart:
			s.starts = append(s.starts, fmt.Sprintf("%d %s %d %v", ev.Step, ev.Node, ev.Task, ev.Arg))
		case graph.EventTaskEnd:
			require.NoError(t, ev.Err)
			s.ends = append(s.ends, fmt.Sprintf("%d %s %d %v", ev.Step, ev.Node, ev.Task, ev.Update.Fields()))
		case graph.EventStep:
			s.steps = append(s.steps, ev.State)
		case graph.EventEnd:
			s.final, s.ended = ev.State, true
		}
	}
	slices.Sort(s.ends)
	return s
}

func TestRemoteStream(t *testing.T) {
	want := rmCollect(t, rmStreamGraph(t))
	lb := &loopback[rmState]{c: rmStreamGraph(t)}
	got := rmCollect(t, rmStreamGraph(t), graph.WithTaskRunner(lb))
	require.True(t, want.ended)
	require.True(t, got.ended)

	assert.Equal(t, []string{"1 split 0 <nil>", "2 work 0 0", "2 work 1 1", "2 work 2 2", "3 join 0 <nil>"}, got.starts)
	assert.Equal(t, want.starts, got.starts)
	assert.Equal(t, []string{"1 split 0 [Log]", "2 work 0 [Items Total]", "2 work 1 [Items Total]", "2 work 2 [Items Total]", "3 join 0 [Log]"}, got.ends)
	assert.Equal(t, want.ends, got.ends)
	assert.True(t, reflect.DeepEqual(want.steps, got.steps), "step states differ:\nin-process %#v\nremote %#v", want.steps, got.steps)
	assert.True(t, reflect.DeepEqual(want.final, got.final), "in-process %#v\nremote %#v", want.final, got.final)
	assert.Equal(t, []string{"0", "1", "2"}, got.final.Items)
	assert.Equal(t, int32(3), lb.steps.Load())

	// Breaking out of a remote stream stops the run.
	lb = &loopback[rmState]{c: rmStreamGraph(t)}
	for ev, err := range rmStreamGraph(t).Stream(context.Background(), rmState{}, graph.WithTaskRunner(lb)) {
		require.NoError(t, err)
		if ev.Kind == graph.EventTaskEnd {
			break
		}
	}
	assert.Equal(t, int32(1), lb.steps.Load(), "no step after the consumer left")
}

func TestMergeUpdates(t *testing.T) {
	c := rmCompile(t, rmNew().AddNode("a", rmLogNode("a")).AddEdge(graph.Start, "a").AddEdge("a", graph.End))
	enc := func(u graph.Update[rmState]) json.RawMessage {
		data, err := json.Marshal(u)
		require.NoError(t, err)
		return data
	}
	start := rmState{Log: []string{"before"}, Total: 1}
	got, err := c.MergeUpdates(start,
		enc(graph.Writes(rmLog.Add("x"), rmTotal.Merge(2)).Goto("a")),
		enc(graph.Writes(rmLog.Add("y"), rmN.Set(7), rmTotal.Merge(3))))
	require.NoError(t, err)
	require.Equal(t, rmState{Log: []string{"before", "x", "y"}, N: 7, Total: 6}, got)
	require.Equal(t, []string{"before"}, start.Log, "the state given is not changed")

	// A Set wins over the other updates' writes to its field, as in a step.
	got, err = c.MergeUpdates(start, enc(graph.Writes(rmLog.Add("x"))), enc(graph.Writes(rmLog.Set([]string{"only"}))))
	require.NoError(t, err)
	require.Equal(t, []string{"only"}, got.Log)

	_, err = c.MergeUpdates(start, json.RawMessage(`{"writes":[{"field":"Nope","op":"set","value":1}]}`))
	require.ErrorContains(t, err, `unknown field "Nope"`)
}
