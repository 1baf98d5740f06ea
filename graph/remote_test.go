package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
)

func rmCompile(t *testing.T, g *graph.Graph[graphtest.State], opts ...graph.Option) *graph.Compiled[graphtest.State] {
	t.Helper()
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
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
	build func(t *testing.T) *graph.Compiled[graphtest.State]
	in    graphtest.State
	opts  []graph.RunOption
	// check holds for both runs.
	check func(t *testing.T, out graphtest.State, err error)
	// tasks, if not 0, is how many times the runner runs a task.
	tasks int
	// otherMessage: the errors' messages differ, for the reason given.
	otherMessage string
}

// rmCases are the shapes every runner shares (graphtest.Shapes), then the
// failures, retries, panics and timeouts of the loopback's own.
func rmCases() []rmCase {
	var cases []rmCase
	for _, sh := range graphtest.Shapes() {
		tc := rmCase{
			name: sh.Name,
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				c, err := sh.Build()
				require.NoError(t, err)
				return c
			},
			in:    sh.In,
			check: func(t *testing.T, out graphtest.State, err error) { require.NoError(t, sh.Check(out, err)) },
			tasks: sh.Tasks,
		}
		if sh.RecursionLimit > 0 {
			tc.opts = []graph.RunOption{graph.RecursionLimit(sh.RecursionLimit)}
		}
		cases = append(cases, tc)
	}
	return append(cases, []rmCase{
		{
			name: "a node fails",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				g := graphtest.New()
				g.AddNode("first", graphtest.LogNode("first"))
				g.AddNode("fine", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					time.Sleep(20 * time.Millisecond)
					return graph.Writes(graphtest.Log.Add("fine")), nil
				})
				g.AddNode("bad", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					return graph.Update[graphtest.State]{}, errBoom
				})
				g.AddEdge(graph.Start, "first")
				g.AddEdge("first", "fine")
				g.AddEdge("first", "bad")
				g.AddEdge("fine", graph.End)
				g.AddEdge("bad", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
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
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				inner := graphtest.New()
				inner.AddNode("x", graphtest.LogNode("x"))
				inner.AddNode("y", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					return graph.Update[graphtest.State]{}, errBoom
				})
				inner.AddSequence(graph.Start, "x", "y", graph.End)
				g := graphtest.New()
				g.AddNode("before", graphtest.LogNode("before"))
				g.AddSubgraph("sub", rmCompile(t, inner))
				g.AddSequence(graph.Start, "before", "sub", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
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
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				var calls atomic.Int32
				inner := graphtest.New()
				inner.AddNode("y", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					if calls.Add(1) == 1 {
						return graph.Update[graphtest.State]{}, errBoom
					}
					return graph.Writes(graphtest.Log.Add("y")), nil
				})
				inner.AddSequence(graph.Start, "y", graph.End)
				g := graphtest.New()
				g.AddSubgraph("sub", rmCompile(t, inner), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
				g.AddSequence(graph.Start, "sub", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"y"}, out.Log)
			},
		},
		{
			name: "a retried node succeeds on its third attempt",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				var calls atomic.Int32
				g := graphtest.New()
				g.AddNode("flaky", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					if n := calls.Add(1); n < 3 {
						return graph.Update[graphtest.State]{}, fmt.Errorf("transient %d", n)
					}
					return graph.Writes(graphtest.Log.Add(fmt.Sprint("ok after ", calls.Load()))), nil
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
				g.AddSequence(graph.Start, "flaky", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				require.NoError(t, err)
				assert.Equal(t, []string{"ok after 3"}, out.Log)
			},
		},
		{
			name: "a retried node runs out of attempts",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				g := graphtest.New()
				g.AddNode("flaky", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
					return graph.Update[graphtest.State]{}, errBoom
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
				g.AddSequence(graph.Start, "flaky", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				require.ErrorIs(t, err, errBoom)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, 2, ne.Attempts)
			},
		},
		{
			name: "a node panics",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				g := graphtest.New()
				g.AddNode("p", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) { panic("kaboom") },
					graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
				g.AddSequence(graph.Start, "p", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				var pe *graph.PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "kaboom", pe.Value)
			},
		},
		{
			name: "a node times out",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				g := graphtest.New()
				g.AddNode("slow", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
					select {
					case <-ctx.Done():
						return graph.Update[graphtest.State]{}, ctx.Err()
					case <-time.After(5 * time.Second):
						return graph.Writes(graphtest.Log.Add("slow")), nil
					}
				}, graph.WithTimeout(20*time.Millisecond))
				g.AddSequence(graph.Start, "slow", graph.End)
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				require.ErrorIs(t, err, graph.ErrTimeout)
				require.ErrorIs(t, err, context.DeadlineExceeded)
			},
		},
		{
			name: "two tasks set one field",
			build: func(t *testing.T) *graph.Compiled[graphtest.State] {
				g := graphtest.New()
				for i, n := range []string{"left", "right"} {
					g.AddNode(n, func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
						return graph.Writes(graphtest.N.Set(i)), nil
					})
					g.AddEdge(graph.Start, n)
					g.AddEdge(n, graph.End)
				}
				return rmCompile(t, g)
			},
			check: func(t *testing.T, out graphtest.State, err error) {
				require.ErrorIs(t, err, graph.ErrConflict)
			},
		},
	}...)
}

func TestRemoteRunGivesTheSameStateAsInProcess(t *testing.T) {
	for _, tc := range rmCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, wantErr := tc.build(t).Invoke(ctx, tc.in, tc.opts...)
			tc.check(t, want, wantErr)

			engine := tc.build(t)
			lb := &loopback[graphtest.State]{c: tc.build(t), scope: "run-1"}
			got, gotErr := engine.Invoke(ctx, tc.in, append(slices.Clip(tc.opts), graph.WithTaskRunner(lb))...)
			tc.check(t, got, gotErr)

			if tc.tasks > 0 {
				assert.Equal(t, int32(tc.tasks), lb.calls.Load(), "each task ran once through the TaskRunner")
			} else {
				assert.Positive(t, lb.calls.Load(), "the tasks ran through the TaskRunner")
			}
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
func rmAsk(t *testing.T, opts ...graph.Option) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("split", graphtest.LogNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[graphtest.State], error) {
		if item == "a" {
			return graph.Writes(graphtest.Items.Add(item)), nil
		}
		ans, err := graph.Interrupt[string](ctx, "what about "+item+"?")
		if err != nil {
			return graph.Update[graphtest.State]{}, err
		}
		n, err := graph.Interrupt[int](ctx, "how many "+item+"?")
		if err != nil {
			return graph.Update[graphtest.State]{}, err
		}
		return graph.Writes(graphtest.Items.Add(fmt.Sprintf("%s=%s×%d", item, ans, n))), nil
	})
	g.AddNode("join", graphtest.LogNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(graphtest.State) []string { return []string{"a", "b", "c"} })
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
	want, err := local.Invoke(ctx, graphtest.State{}, graph.Thread("t"))
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
	lb := &loopback[graphtest.State]{c: rmAsk(t), scope: "run-7", answer: answer}
	got, err := rmAsk(t).Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(lb))
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(want, got), "in-process %#v\nremote %#v", want, got)
	// a: once; b and c: asked, asked again, answered.
	assert.Equal(t, int32(1+1+3+3+1), lb.calls.Load())
}

func TestRemoteStepDescribesTheTasks(t *testing.T) {
	g := graphtest.New()
	g.AddNode("split", graphtest.LogNode("split"))
	graph.AddTask(g, "work", func(_ context.Context, j graphtest.Job) (graph.Update[graphtest.State], error) {
		return graph.Writes(graphtest.Items.Add(j.Name)), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 4}), graph.WithTimeout(time.Minute))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(graphtest.State) []graphtest.Job {
		return []graphtest.Job{{Name: "p", Weight: 1}, {Name: "q", Weight: 2}}
	})
	g.AddEdge("work", graph.End)
	lb := &loopback[graphtest.State]{c: rmCompile(t, g)}
	out, err := rmCompile(t, g).Invoke(context.Background(), graphtest.State{N: 9}, graph.WithTaskRunner(lb))
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "q"}, out.Items)

	require.Len(t, lb.seen, 2)
	first := lb.seen[0]
	assert.Equal(t, 1, first.Step)
	var st graphtest.State
	require.NoError(t, json.Unmarshal(first.State, &st))
	assert.Equal(t, graphtest.State{N: 9}, st, "the state the step reads")
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
	for i, want := range []graphtest.Job{{Name: "p", Weight: 1}, {Name: "q", Weight: 2}} {
		task := second.Tasks[i]
		assert.Equal(t, "work", task.Node)
		assert.Equal(t, i, task.Index)
		assert.Equal(t, want, task.Arg)
		assert.JSONEq(t, fmt.Sprintf(`{"Name":%q,"Weight":%d}`, want.Name, want.Weight), string(task.ArgJSON))
		require.NotNil(t, task.Retry)
		assert.Equal(t, 4, task.Retry.MaxAttempts)
		assert.Equal(t, 2.0, task.Retry.BackoffFactor, "the policy comes with its defaults filled in")
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
	c := rmCompile(t, graphtest.New().AddNode("a", graphtest.LogNode("a")).AddSequence(graph.Start, "a", graph.End))
	ctx := context.Background()

	t.Run("the runner fails", func(t *testing.T) {
		broke := errors.New("the queue is gone")
		_, err := c.Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(brokenRunner{err: broke}))
		require.ErrorIs(t, err, broke)
		assert.Contains(t, err.Error(), "step 1")
		var ne *graph.NodeError
		assert.False(t, errors.As(err, &ne), "a broken runner is not a node's failure")
	})
	t.Run("too few results", func(t *testing.T) {
		_, err := c.Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(brokenRunner{}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "returned 0 results for 1 tasks")
	})
	t.Run("a task's own error names its node", func(t *testing.T) {
		_, err := c.Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Err: errBoom, Attempts: 2}}}))
		require.ErrorIs(t, err, errBoom)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "a", ne.Node)
		assert.Equal(t, 1, ne.Step)
		assert.Equal(t, 2, ne.Attempts)
	})
	t.Run("an update that does not decode", func(t *testing.T) {
		_, err := c.Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Update: json.RawMessage(`{"writes":[{"field":"Nope","op":"add","value":[]}]}`)}}}))
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "a", ne.Node)
		assert.Contains(t, err.Error(), `unknown field "Nope"`)
	})
	t.Run("the run is cancelled", func(t *testing.T) {
		g := graphtest.New()
		g.AddNode("wait", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
			<-ctx.Done()
			return graph.Update[graphtest.State]{}, ctx.Err()
		})
		g.AddSequence(graph.Start, "wait", graph.End)
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		lb := &loopback[graphtest.State]{c: rmCompile(t, g)}
		_, err := rmCompile(t, g).Invoke(ctx, graphtest.State{}, graph.WithTaskRunner(lb))
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
func rmWorker(t *testing.T) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("ok", func(_ context.Context, s graphtest.State) (graph.Update[graphtest.State], error) {
		return graph.Writes(graphtest.Log.Add(fmt.Sprint("ok ", s.N))), nil
	})
	g.AddNode("flaky", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		return graph.Update[graphtest.State]{}, errBoom
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("permanent", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		return graph.Update[graphtest.State]{}, graph.Permanent(errBoom)
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("panics", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) { panic("kaboom") },
		graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddNode("slow", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		<-ctx.Done()
		return graph.Update[graphtest.State]{}, ctx.Err()
	}, graph.WithTimeout(10*time.Millisecond))
	g.AddNode("ask", func(ctx context.Context, s graphtest.State) (graph.Update[graphtest.State], error) {
		n, err := graph.Interrupt[int](ctx, rmQuestion{Text: "how many?", N: s.N})
		if err != nil {
			return graph.Update[graphtest.State]{}, err
		}
		return graph.Writes(graphtest.N.Set(n)), nil
	})
	g.AddNode("emits", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		graph.Emit(ctx, "a")
		graph.Emit(ctx, "b")
		return graph.Writes(graphtest.Log.Add(fmt.Sprint("streaming=", graph.Streaming(ctx)))), nil
	})
	inner := graphtest.New()
	inner.AddNode("y", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		graph.Emit(ctx, "from y")
		return graph.Writes(graphtest.Log.Add("y")), nil
	})
	inner.AddSequence(graph.Start, "y", graph.End)
	g.AddSubgraph("sub", rmCompile(t, inner))
	for _, n := range []string{"ok", "flaky", "permanent", "panics", "slow", "ask", "emits", "sub"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	graph.AddTask(g, "work", func(_ context.Context, j graphtest.Job) (graph.Update[graphtest.State], error) {
		return graph.Writes(graphtest.Items.Add(fmt.Sprintf("%s:%d", j.Name, j.Weight))), nil
	})
	graph.AddFanOut(g, "ok", "work", func(graphtest.State) []graphtest.Job { return nil })
	g.AddEdge("work", graph.End)
	return rmCompile(t, g)
}

// rmInput is attempt 1 of task 1 of step 3 of run-A, on a state with N 4.
func rmInput(t *testing.T, node string) graph.TaskInput {
	state, err := json.Marshal(graphtest.State{N: 4, Log: []string{"before"}})
	require.NoError(t, err)
	return graph.TaskInput{Step: 3, State: state, Task: graph.RemoteTask{Node: node, Index: 1}, Attempt: 1, Scope: "run-A"}
}

// rmUpdate decodes an update as the engine does, by merging it as the
// only task of a one-node graph, and returns the state it makes.
func rmUpdate(t *testing.T, data json.RawMessage) graphtest.State {
	t.Helper()
	require.NotEmpty(t, data)
	c := rmCompile(t, graphtest.New().AddNode("replay", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		return graph.Update[graphtest.State]{}, nil
	}).AddSequence(graph.Start, "replay", graph.End))
	out, err := c.Invoke(context.Background(), graphtest.State{}, graph.WithTaskRunner(brokenRunner{res: []graph.RemoteResult{{Update: data}}}))
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
		// "slow" waits for its context alone: only its timeout ends it.
		out, err := c.RunTask(ctx, rmInput(t, "slow"), nil)
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
		var end graph.Event[graphtest.State]
		observe := func(ev graph.Event[graphtest.State]) {
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
		written, ok := graphtest.Log.Written(end.Update)
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
	g := graphtest.New()
	g.AddNode("a", graphtest.LogNode("a"))
	g.AddNode("b", graphtest.LogNode("b"))
	g.AddSequence(graph.Start, "a", "b", graph.End)
	for _, opt := range []graph.Option{graph.WithInterruptBefore("b"), graph.WithInterruptAfter("a")} {
		c := rmCompile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), opt)
		lb := &loopback[graphtest.State]{c: c}
		ctx := context.Background()
		_, err := c.Invoke(ctx, graphtest.State{}, graph.Thread("bp"), graph.WithTaskRunner(lb))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "breakpoints (WithInterruptBefore")
		assert.Contains(t, err.Error(), "TaskRunner")
		assert.Contains(t, err.Error(), "graph.Interrupt")
		for _, err := range c.Stream(ctx, graphtest.State{}, graph.Thread("bp"), graph.WithTaskRunner(lb)) {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "TaskRunner")
		}
		_, err = c.Resume(ctx, graph.Thread("bp"), graph.WithTaskRunner(lb))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "TaskRunner")
		assert.Zero(t, lb.calls.Load(), "nothing ran")

		// Without a runner the breakpoint pauses as usual.
		_, err = c.Invoke(ctx, graphtest.State{}, graph.Thread("bp"))
		require.ErrorIs(t, err, graph.ErrInterrupted)
	}
}

// rmStreamGraph is split → three work tasks → join, with Emits along the way.
func rmStreamGraph(t *testing.T) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("split", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		graph.Emit(ctx, "splitting")
		return graph.Writes(graphtest.Log.Add("split")), nil
	})
	graph.AddTask(g, "work", func(_ context.Context, i int) (graph.Update[graphtest.State], error) {
		time.Sleep(time.Duration(3-i) * 2 * time.Millisecond)
		return graph.Writes(graphtest.Items.Add(fmt.Sprint(i)), graphtest.Total.Merge(i)), nil
	})
	g.AddNode("join", graphtest.LogNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(graphtest.State) []int { return []int{0, 1, 2} })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return rmCompile(t, g)
}

// rmStreamed is what a stream showed: the task starts in order, the task
// ends (sorted: in-process they come in completion order), the states of
// the steps, and the final state.
type rmStreamed struct {
	starts, ends []string
	steps        []graphtest.State
	final        graphtest.State
	ended        bool
}

func rmCollect(t *testing.T, c *graph.Compiled[graphtest.State], opts ...graph.RunOption) rmStreamed {
	t.Helper()
	var s rmStreamed
	for ev, err := range c.Stream(context.Background(), graphtest.State{}, opts...) {
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
	lb := &loopback[graphtest.State]{c: rmStreamGraph(t)}
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
	lb = &loopback[graphtest.State]{c: rmStreamGraph(t)}
	for ev, err := range rmStreamGraph(t).Stream(context.Background(), graphtest.State{}, graph.WithTaskRunner(lb)) {
		require.NoError(t, err)
		if ev.Kind == graph.EventTaskEnd {
			break
		}
	}
	assert.Equal(t, int32(1), lb.steps.Load(), "no step after the consumer left")
}

func TestMergeUpdates(t *testing.T) {
	c := rmCompile(t, graphtest.New().AddNode("a", graphtest.LogNode("a")).AddEdge(graph.Start, "a").AddEdge("a", graph.End))
	enc := func(u graph.Update[graphtest.State]) json.RawMessage {
		data, err := json.Marshal(u)
		require.NoError(t, err)
		return data
	}
	start := graphtest.State{Log: []string{"before"}, Total: 1}
	got, err := c.MergeUpdates(start,
		enc(graph.Writes(graphtest.Log.Add("x"), graphtest.Total.Merge(2)).Goto("a")),
		enc(graph.Writes(graphtest.Log.Add("y"), graphtest.N.Set(7), graphtest.Total.Merge(3))))
	require.NoError(t, err)
	require.Equal(t, graphtest.State{Log: []string{"before", "x", "y"}, N: 7, Total: 6}, got)
	require.Equal(t, []string{"before"}, start.Log, "the state given is not changed")

	// A Set wins over the other updates' writes to its field, as in a step.
	got, err = c.MergeUpdates(start, enc(graph.Writes(graphtest.Log.Add("x"))), enc(graph.Writes(graphtest.Log.Set([]string{"only"}))))
	require.NoError(t, err)
	require.Equal(t, []string{"only"}, got.Log)

	_, err = c.MergeUpdates(start, json.RawMessage(`{"writes":[{"field":"Nope","op":"set","value":1}]}`))
	require.ErrorContains(t, err, `unknown field "Nope"`)
}
