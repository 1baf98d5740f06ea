package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// tState is the state of most engine tests: Log records node runs in merge
// order.
type tState struct {
	Log   []string
	N     int
	Items []string
	Flag  bool
}

var (
	tLog   = graph.Append(func(s *tState) *[]string { return &s.Log })
	tN     = graph.Value(func(s *tState) *int { return &s.N })
	tItems = graph.Append(func(s *tState) *[]string { return &s.Items })
	tFlag  = graph.Value(func(s *tState) *bool { return &s.Flag })
)

func newT() *graph.Graph[tState] { return graph.New[tState](tLog, tN, tItems, tFlag) }

// logNode appends its name to Log.
func logNode(name string) graph.NodeFunc[tState] {
	return func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tLog.Add(name)), nil
	}
}

func compile(t *testing.T, g *graph.Graph[tState], opts ...graph.Option) *graph.Compiled[tState] {
	t.Helper()
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
}

func TestLinearChain(t *testing.T) {
	g := newT()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, logNode(n))
	}
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
}

func TestParallelBranchesMergeInTaskOrderAndJoinOnce(t *testing.T) {
	// Start fans out to b1, b2, b3 (edges in that order); each leads to j,
	// which must run once, after all three, seeing their writes in task order
	// although they finish in reverse order.
	g := newT()
	g.AddNode("a", logNode("a"))
	for i, n := range []string{"b1", "b2", "b3"} {
		delay := time.Duration(3-i) * 5 * time.Millisecond
		g.AddNode(n, func(ctx context.Context, _ tState) (graph.Update[tState], error) {
			time.Sleep(delay)
			return graph.Writes(tLog.Add(n)), nil
		})
		g.AddEdge("a", n)
		g.AddEdge(n, "j")
	}
	g.AddNode("j", logNode("j"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("j", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b1", "b2", "b3", "j"}, out.Log)
}

func TestWaitingEdgeWaitsForBranchesOfUnequalLength(t *testing.T) {
	// a → b → c and a → d; join [c, d] → e. With plain edges e would run after
	// d (step 2) and again after c (step 3); the join runs it once, after both.
	g := newT()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		g.AddNode(n, logNode(n))
	}
	g.AddEdge(graph.Start, "a")
	g.AddSequence("a", "b", "c")
	g.AddEdge("a", "d")
	g.AddJoin([]string{"c", "d"}, "e")
	g.AddEdge("e", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "d", "c", "e"}, out.Log)
}

func TestConditionalEdgesRouteByState(t *testing.T) {
	build := func() *graph.Compiled[tState] {
		g := newT()
		g.AddNode("check", logNode("check"))
		g.AddNode("yes", logNode("yes"))
		g.AddNode("no", logNode("no"))
		g.AddEdge(graph.Start, "check")
		g.AddConditional("check", func(s tState) graph.Route {
			if s.Flag {
				return graph.Goto("yes")
			}
			return graph.Goto("no")
		}, "yes", "no")
		g.AddEdge("yes", graph.End)
		g.AddEdge("no", graph.End)
		return compile(t, g)
	}
	c := build()
	for _, flag := range []bool{true, false} {
		out, err := c.Invoke(context.Background(), tState{Flag: flag})
		require.NoError(t, err)
		want := map[bool]string{true: "yes", false: "no"}[flag]
		assert.Equal(t, []string{"check", want}, out.Log)
	}
}

func TestRouterReturningNodesAndSends(t *testing.T) {
	g := newT()
	g.AddNode("plan", logNode("plan"))
	g.AddNode("audit", logNode("audit"))
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[tState], error) {
		return graph.Writes(tItems.Add("done:" + item)), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddConditional("plan", func(tState) graph.Route {
		return graph.Route{Nodes: []string{"audit"}, Sends: []graph.Send{{Node: "work", Arg: "x"}, {Node: "work", Arg: "y"}}}
	}, "audit", "work")
	g.AddEdge("audit", graph.End)
	g.AddEdge("work", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"plan", "audit"}, out.Log)
	assert.Equal(t, []string{"done:x", "done:y"}, out.Items)
}

func TestCommandGotoAndSend(t *testing.T) {
	g := newT()
	g.AddNode("decide", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tLog.Add("decide")).Goto("after").Send(graph.Send{Node: "work", Arg: "z"}), nil
	}, graph.Destinations("after", "work"))
	g.AddNode("after", logNode("after"))
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[tState], error) {
		return graph.Writes(tItems.Add(item)), nil
	})
	g.AddEdge(graph.Start, "decide")
	g.AddEdge("after", graph.End)
	g.AddEdge("work", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"decide", "after"}, out.Log)
	assert.Equal(t, []string{"z"}, out.Items)
}

func TestRouteErrors(t *testing.T) {
	tests := []struct {
		name  string
		route graph.Route
		want  string
	}{
		{"undeclared destination", graph.Goto("other"), "not among its declared destinations"},
		{"send to undeclared destination", graph.Sends(graph.Send{Node: "other", Arg: "x"}), "Send to an undeclared destination"},
		{"send to a state node", graph.Sends(graph.Send{Node: "next", Arg: "x"}), "not a task node"},
		{"plain route to a task node", graph.Goto("work"), "task node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newT()
			g.AddNode("a", logNode("a"))
			g.AddNode("next", logNode("next"))
			g.AddNode("other", logNode("other"))
			graph.AddTask(g, "work", func(context.Context, string) (graph.Update[tState], error) { return graph.Update[tState]{}, nil })
			g.AddEdge(graph.Start, "a")
			g.AddConditional("a", func(tState) graph.Route { return tt.route }, "next", "work")
			g.AddEdge(graph.Start, "other")
			for _, n := range []string{"next", "other", "work"} {
				g.AddEdge(n, graph.End)
			}
			_, err := compile(t, g).Invoke(context.Background(), tState{})
			var re *graph.RouteError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "a", re.From)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSendPayloadTypeIsCheckedAtRunTime(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	graph.AddTask(g, "work", func(context.Context, string) (graph.Update[tState], error) { return graph.Update[tState]{}, nil })
	g.AddEdge(graph.Start, "a")
	g.AddConditional("a", func(tState) graph.Route { return graph.Sends(graph.Send{Node: "work", Arg: 42}) }, "work")
	g.AddEdge("work", graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	var pe *graph.PayloadError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "work", pe.Node)
	assert.Contains(t, err.Error(), "carries int, but the task takes string")
}

func TestConflictingWritesNameBothNodes(t *testing.T) {
	g := newT()
	g.AddNode("left", func(context.Context, tState) (graph.Update[tState], error) { return graph.Writes(tN.Set(1)), nil })
	g.AddNode("right", func(context.Context, tState) (graph.Update[tState], error) { return graph.Writes(tN.Set(2)), nil })
	g.AddEdge(graph.Start, "left")
	g.AddEdge(graph.Start, "right")
	g.AddEdge("left", graph.End)
	g.AddEdge("right", graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	var ce *graph.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.True(t, errors.Is(err, graph.ErrConflict))
	assert.Equal(t, "N", ce.Field)
	assert.Equal(t, [2]string{"left", "right"}, ce.Nodes)
	assert.Equal(t, 1, ce.Step)
	assert.Contains(t, err.Error(), `nodes "left" and "right" both set field N in step 1`)
}

func TestParallelAppendsDoNotConflict(t *testing.T) {
	g := newT()
	g.AddNode("left", logNode("left"))
	g.AddNode("right", logNode("right"))
	g.AddEdge(graph.Start, "left")
	g.AddEdge(graph.Start, "right")
	g.AddEdge("left", graph.End)
	g.AddEdge("right", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"left", "right"}, out.Log)
}

func TestUndeclaredFieldIsAnError(t *testing.T) {
	g := graph.New[tState](tLog) // tN not declared
	g.AddNode("a", func(context.Context, tState) (graph.Update[tState], error) { return graph.Writes(tN.Set(1)), nil })
	g.AddSequence(graph.Start, "a", graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wrote field N, which is not declared")
}

func TestDeterministicMergeOrder(t *testing.T) {
	// 50 Send tasks finishing in random order, run 100 times: the merged list
	// is in Send order every time.
	const width = 50
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, i int) (graph.Update[tState], error) {
		time.Sleep(time.Duration((i*7919)%5) * 100 * time.Microsecond)
		runtime.Gosched()
		return graph.Writes(tItems.Add(fmt.Sprint(i))), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []int {
		out := make([]int, width)
		for i := range out {
			out[i] = i
		}
		return out
	})
	g.AddEdge("work", graph.End)
	c := compile(t, g)
	want := make([]string, width)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	for range 100 {
		out, err := c.Invoke(context.Background(), tState{})
		require.NoError(t, err)
		require.Equal(t, want, out.Items)
	}
}

func TestRecursionLimit(t *testing.T) {
	g := newT()
	g.AddNode("loop", func(_ context.Context, s tState) (graph.Update[tState], error) {
		return graph.Writes(tN.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "loop")
	g.AddConditional("loop", func(tState) graph.Route { return graph.Goto("loop") }, "loop")
	c := compile(t, g, graph.WithRecursionLimit(7))
	out, err := c.Invoke(context.Background(), tState{})
	require.ErrorIs(t, err, graph.ErrRecursionLimit)
	var re *graph.RecursionError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 7, re.Limit)
	assert.Equal(t, []string{"loop"}, re.Next)
	assert.Equal(t, 7, out.N, "the state of the last completed step comes back with the error")
	assert.Contains(t, err.Error(), "recursion limit of 7 steps")

	// A per-run override.
	out, err = c.Invoke(context.Background(), tState{}, graph.RecursionLimit(3))
	require.ErrorIs(t, err, graph.ErrRecursionLimit)
	assert.Equal(t, 3, out.N)
}

var errBoom = errors.New("boom")

func TestNodeErrorCancelsSiblingsAndNamesNodeAndStep(t *testing.T) {
	var cancelled atomic.Bool
	g := newT()
	g.AddNode("first", logNode("first"))
	g.AddNode("slow", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		select {
		case <-ctx.Done():
			cancelled.Store(true)
			return graph.Update[tState]{}, ctx.Err()
		case <-time.After(time.Minute):
			return graph.Update[tState]{}, nil
		}
	})
	g.AddNode("bad", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Update[tState]{}, errBoom
	})
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "slow")
	g.AddEdge("first", "bad")
	g.AddEdge("slow", graph.End)
	g.AddEdge("bad", graph.End)
	// "slow" ends only when its context is cancelled (or after a minute,
	// which the cancelled flag below tells apart).
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.ErrorIs(t, err, errBoom)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "bad", ne.Node)
	assert.Equal(t, 2, ne.Step)
	assert.Equal(t, `graph: node "bad" failed in step 2: boom`, err.Error())
	assert.True(t, cancelled.Load(), "the sibling saw its context cancelled")
	assert.Equal(t, []string{"first"}, out.Log)
}

func TestPanicBecomesErrorWithStack(t *testing.T) {
	g := newT()
	g.AddNode("p", func(context.Context, tState) (graph.Update[tState], error) { panic("kaboom") })
	g.AddSequence(graph.Start, "p", graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	var pe *graph.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, string(pe.Stack), "engine_test.go")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "p", ne.Node)
}

func TestRouterPanicBecomesError(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddEdge(graph.Start, "a")
	g.AddConditional("a", func(tState) graph.Route { panic("router bug") }, graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	var pe *graph.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), `node "a"`)
	assert.Contains(t, err.Error(), "router panicked")
}

func TestCancellationStopsTheRunPromptly(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprint("parallel=", parallel), func(t *testing.T) {
			g := newT()
			var waiting sync.WaitGroup // the nodes waiting for their context
			waiting.Add(1)
			if parallel {
				waiting.Add(1)
			}
			block := func(ctx context.Context, _ tState) (graph.Update[tState], error) {
				waiting.Done()
				<-ctx.Done()
				return graph.Update[tState]{}, ctx.Err()
			}
			g.AddNode("a", block)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			if parallel {
				g.AddNode("b", block)
				g.AddEdge(graph.Start, "b")
				g.AddEdge("b", graph.End)
			}
			// The nodes wait for their context alone: Invoke returns only
			// once the cancellation has reached them all.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				waiting.Wait()
				cancel()
			}()
			_, err := compile(t, g).Invoke(ctx, tState{})
			require.ErrorIs(t, err, context.Canceled)
			var ne *graph.NodeError
			assert.False(t, errors.As(err, &ne), "cancellation is not a node failure: %v", err)
		})
	}
}

func TestMaxConcurrencyBoundsTasksInFlight(t *testing.T) {
	var inFlight, peak atomic.Int32
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(context.Context, int) (graph.Update[tState], error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		inFlight.Add(-1)
		return graph.Update[tState]{}, nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []int { return make([]int, 20) })
	g.AddEdge("work", graph.End)
	c := compile(t, g, graph.WithMaxConcurrency(3))
	_, err := c.Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), peak.Load())

	peak.Store(0)
	_, err = c.Invoke(context.Background(), tState{}, graph.MaxConcurrency(20))
	require.NoError(t, err)
	assert.Greater(t, peak.Load(), int32(3), "the per-run override raises the bound")
}

func TestRetryPolicy(t *testing.T) {
	transient := errors.New("transient")
	tests := []struct {
		name      string
		policy    graph.RetryPolicy
		failures  int
		err       error
		wantCalls int32
		wantErr   bool
	}{
		{"succeeds on the third attempt", graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}, 2, transient, 3, false},
		{"gives up after max attempts", graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}, 5, transient, 2, true},
		{"retry-on refuses", graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond, RetryOn: func(err error) bool { return false }}, 5, transient, 1, true},
		{"permanent errors are not retried", graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond}, 5, graph.Permanent(transient), 1, true},
		{"backoff with jitter", graph.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, BackoffFactor: 2, MaxInterval: 2 * time.Millisecond, Jitter: true}, 3, transient, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			g := newT()
			g.AddNode("flaky", func(context.Context, tState) (graph.Update[tState], error) {
				if int(calls.Add(1)) <= tt.failures {
					return graph.Update[tState]{}, tt.err
				}
				return graph.Writes(tLog.Add("ok")), nil
			}, graph.WithRetry(tt.policy))
			g.AddSequence(graph.Start, "flaky", graph.End)
			out, err := compile(t, g).Invoke(context.Background(), tState{})
			assert.Equal(t, tt.wantCalls, calls.Load())
			if tt.wantErr {
				require.ErrorIs(t, err, transient)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, int(tt.wantCalls), ne.Attempts)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"ok"}, out.Log)
		})
	}
}

func TestTimeoutPerAttemptAndGraphDefaults(t *testing.T) {
	slow := func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		select {
		case <-ctx.Done():
			return graph.Update[tState]{}, ctx.Err()
		case <-time.After(time.Minute):
			return graph.Writes(tLog.Add("slow")), nil
		}
	}
	t.Run("node timeout", func(t *testing.T) {
		g := newT()
		g.AddNode("slow", slow, graph.WithTimeout(20*time.Millisecond))
		g.AddSequence(graph.Start, "slow", graph.End)
		// Without the timeout, slow would answer (after a minute) and
		// Invoke succeed.
		_, err := compile(t, g).Invoke(context.Background(), tState{})
		require.ErrorIs(t, err, graph.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `node "slow" failed in step 1`)
	})
	t.Run("graph default, retried", func(t *testing.T) {
		var calls atomic.Int32
		g := newT()
		g.AddNode("slow", func(ctx context.Context, s tState) (graph.Update[tState], error) {
			calls.Add(1)
			return slow(ctx, s)
		})
		g.AddSequence(graph.Start, "slow", graph.End)
		c := compile(t, g, graph.WithNodeDefaults(graph.WithTimeout(10*time.Millisecond), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond})))
		_, err := c.Invoke(context.Background(), tState{})
		require.ErrorIs(t, err, graph.ErrTimeout)
		assert.Equal(t, int32(2), calls.Load())
	})
	t.Run("node option overrides the default", func(t *testing.T) {
		g := newT()
		g.AddNode("quick", logNode("quick"), graph.WithTimeout(0))
		g.AddSequence(graph.Start, "quick", graph.End)
		c := compile(t, g, graph.WithNodeDefaults(graph.WithTimeout(time.Nanosecond)))
		out, err := c.Invoke(context.Background(), tState{})
		require.NoError(t, err)
		assert.Equal(t, []string{"quick"}, out.Log)
	})
}

func TestSubgraphSameState(t *testing.T) {
	inner := newT()
	inner.AddNode("x", logNode("x"))
	inner.AddNode("y", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		graph.Emit(ctx, "from y")
		return graph.Writes(tLog.Add("y"), tN.Set(s.N+10)), nil
	})
	inner.AddSequence(graph.Start, "x", "y", graph.End)
	sub := compile(t, inner)

	g := newT()
	g.AddNode("before", logNode("before"))
	g.AddSubgraph("sub", sub)
	g.AddNode("sibling", logNode("sibling"))
	g.AddEdge(graph.Start, "before")
	g.AddEdge("before", "sub")
	g.AddEdge("before", "sibling")
	g.AddJoin([]string{"sub", "sibling"}, "after")
	g.AddNode("after", logNode("after"))
	g.AddEdge("after", graph.End)
	c := compile(t, g)

	out, err := c.Invoke(context.Background(), tState{N: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"before", "x", "y", "sibling", "after"}, out.Log)
	assert.Equal(t, 11, out.N)

	var custom []string
	for ev, err := range c.Stream(context.Background(), tState{N: 1}) {
		require.NoError(t, err)
		if ev.Kind == graph.EventCustom {
			custom = append(custom, ev.Node+": "+ev.Value.(string))
		}
	}
	assert.Equal(t, []string{"sub/y: from y"}, custom)
	assert.Contains(t, c.Mermaid(), "sub[[sub]]")
}

func TestMappedSubgraph(t *testing.T) {
	type inner struct{ Words []string }
	words := graph.Append(func(s *inner) *[]string { return &s.Words })
	ig := graph.New[inner](words)
	ig.AddNode("upper", func(_ context.Context, s inner) (graph.Update[inner], error) {
		out := make([]string, len(s.Words))
		for i, w := range s.Words {
			out[i] = strings.ToUpper(w)
		}
		return graph.Writes(words.Set(out)), nil
	})
	ig.AddSequence(graph.Start, "upper", graph.End)
	sub, err := ig.Compile()
	require.NoError(t, err)

	g := newT()
	graph.AddMappedSubgraph(g, "shout", sub,
		func(s tState) inner { return inner{Words: s.Items} },
		func(i inner) graph.Update[tState] { return graph.Writes(tLog.Add(i.Words...)) })
	g.AddSequence(graph.Start, "shout", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{Items: []string{"a", "b"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "B"}, out.Log)
}

func TestStreamEvents(t *testing.T) {
	g := newT()
	g.AddNode("a", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		graph.Emit(ctx, "tok1")
		graph.Emit(ctx, "tok2")
		return graph.Writes(tLog.Add("a")), nil
	})
	graph.AddTask(g, "t", func(ctx context.Context, s string) (graph.Update[tState], error) {
		return graph.Writes(tItems.Add(s)), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddConditional("a", func(tState) graph.Route {
		return graph.Sends(graph.Send{Node: "t", Arg: "p"}, graph.Send{Node: "t", Arg: "q"})
	}, "t")
	g.AddEdge("t", graph.End)
	c := compile(t, g)

	var kinds []string
	var final tState
	for ev, err := range c.Stream(context.Background(), tState{}) {
		require.NoError(t, err)
		switch ev.Kind {
		case graph.EventTaskStart:
			kinds = append(kinds, fmt.Sprintf("start %d %s %v", ev.Step, ev.Node, ev.Arg))
		case graph.EventTaskEnd:
			kinds = append(kinds, fmt.Sprintf("end %d %s %v", ev.Step, ev.Node, ev.Update.Fields()))
		case graph.EventCustom:
			kinds = append(kinds, fmt.Sprintf("custom %d %s %v", ev.Step, ev.Node, ev.Value))
		case graph.EventStep:
			kinds = append(kinds, fmt.Sprintf("step %d %v", ev.Step, ev.State.Items))
		case graph.EventEnd:
			final = ev.State
			kinds = append(kinds, "end")
		}
	}
	assert.Equal(t, []string{
		"step 0 []", "start 1 a <nil>", "custom 1 a tok1", "custom 1 a tok2", "end 1 a [Log]", "step 1 []",
		"start 2 t p", "start 2 t q", "end 2 t [Items]", "end 2 t [Items]", "step 2 [p q]", "end",
	}, kinds)
	assert.Equal(t, []string{"p", "q"}, final.Items)

	// A filter keeps only the asked-for kinds.
	var got []graph.EventKind
	for ev, err := range c.Stream(context.Background(), tState{}, graph.Events(graph.EventCustom, graph.EventEnd)) {
		require.NoError(t, err)
		got = append(got, ev.Kind)
	}
	assert.Equal(t, []graph.EventKind{graph.EventCustom, graph.EventCustom, graph.EventEnd}, got)
}

// The recursion limit counts the steps of one invocation: an approval loop
// of many turns, each a Resume, never reaches it, and a run stopped by it
// resumes with the same limit.
func TestRecursionLimitPerInvocation(t *testing.T) {
	g := newT()
	g.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		ans, err := graph.Interrupt[string](ctx, fmt.Sprintf("turn %d?", s.N+1))
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tN.Set(s.N+1), tLog.Add(ans)), nil
	})
	g.AddNode("act", logNode("act"))
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", "act")
	g.AddConditional("act", func(s tState) graph.Route {
		if s.N >= 30 {
			return graph.Goto(graph.End)
		}
		return graph.Goto("ask")
	}, "ask", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithRecursionLimit(10))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("approvals"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	var out tState
	for turn := 1; turn <= 30; turn++ {
		out, err = c.Resume(ctx, graph.Thread("approvals"), graph.Answer(fmt.Sprintf("yes %d", turn)))
		if turn < 30 {
			require.ErrorIs(t, err, graph.ErrInterrupted, "turn %d", turn)
		}
	}
	require.NoError(t, err, "thirty turns of two steps each at limit 10")
	assert.Equal(t, 30, out.N)

	// A loop stopped by the limit goes on with the same limit.
	g = newT()
	g.AddNode("loop", func(_ context.Context, s tState) (graph.Update[tState], error) {
		return graph.Writes(tN.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "loop")
	g.AddConditional("loop", func(s tState) graph.Route {
		if s.N >= 12 {
			return graph.Goto(graph.End)
		}
		return graph.Goto("loop")
	}, "loop", graph.End)
	c = compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithRecursionLimit(5))
	out, err = c.Invoke(ctx, tState{}, graph.Thread("loop"))
	var re *graph.RecursionError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "loop", re.Thread)
	assert.Contains(t, err.Error(), `Resume thread "loop"`)
	assert.Equal(t, 5, out.N)
	out, err = c.Resume(ctx, graph.Thread("loop"))
	require.ErrorIs(t, err, graph.ErrRecursionLimit, "five more steps, then the limit again")
	assert.Equal(t, 10, out.N)
	out, err = c.Resume(ctx, graph.Thread("loop"), graph.RecursionLimit(5))
	require.NoError(t, err)
	assert.Equal(t, 12, out.N)

	// Or with a higher one, at once.
	out, err = c.Invoke(ctx, tState{}, graph.Thread("loop2"))
	require.ErrorIs(t, err, graph.ErrRecursionLimit)
	out, err = c.Resume(ctx, graph.Thread("loop2"), graph.RecursionLimit(50))
	require.NoError(t, err)
	assert.Equal(t, 12, out.N)
}
