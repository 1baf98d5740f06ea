package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// twoLevels is prep → mid → End, where mid is the subgraph m1 → inner →
// End and inner the subgraph i1 → i2 → End, all over tState. i2 emits.
// It returns the graph and mid.
func twoLevels(t *testing.T, opts ...graph.Option) (*graph.Compiled[tState], *graph.Compiled[tState]) {
	in := newT()
	in.AddNode("i1", logNode("i1"))
	in.AddNode("i2", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		graph.Emit(ctx, "from i2")
		return graph.Writes(tLog.Add("i2")), nil
	})
	in.AddSequence(graph.Start, "i1", "i2", graph.End)
	mid := newT()
	mid.AddNode("m1", logNode("m1"))
	mid.AddSubgraph("inner", compile(t, in, opts...))
	mid.AddSequence(graph.Start, "m1", "inner", graph.End)
	midRun := compile(t, mid, opts...)
	g := newT()
	g.AddNode("prep", logNode("prep"))
	g.AddSubgraph("mid", midRun)
	g.AddSequence(graph.Start, "prep", "mid", graph.End)
	return compile(t, g, opts...), midRun
}

func collect[S any](t *testing.T, events func(func(graph.Event[S], error) bool)) []graph.Event[S] {
	t.Helper()
	var out []graph.Event[S]
	for ev, err := range events {
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// describe is an event as "ns kind node step", for comparing streams.
func describe[S any](evs []graph.Event[S]) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s %s %d", ev.Namespace, ev.Kind, ev.Node, ev.Step))
	}
	return out
}

// own keeps the events without a namespace: the run's own.
func own[S any](evs []graph.Event[S]) []graph.Event[S] {
	var out []graph.Event[S]
	for _, ev := range evs {
		if ev.Namespace == "" {
			out = append(out, ev)
		}
	}
	return out
}

func TestSubgraphStreamTwoLevels(t *testing.T) {
	for _, checkpointed := range []bool{false, true} {
		t.Run(fmt.Sprint("checkpointed=", checkpointed), func(t *testing.T) {
			var opts []graph.Option
			withOpts := []graph.RunOption{graph.StreamSubgraphs()}
			var withoutOpts []graph.RunOption
			if checkpointed {
				opts = append(opts, graph.WithCheckpointer(graph.NewMemorySaver()))
				withOpts = append(withOpts, graph.Thread("with"))
				withoutOpts = append(withoutOpts, graph.Thread("without"))
			}
			run, mid := twoLevels(t, opts...)
			ctx := context.Background()
			with := collect(t, run.Stream(ctx, tState{}, withOpts...))

			// Without the option: the run's own events and the inner Emit,
			// no namespace anywhere.
			without := collect(t, run.Stream(ctx, tState{}, withoutOpts...))
			for _, ev := range without {
				assert.Empty(t, ev.Namespace, "%s %s", ev.Kind, ev.Node)
			}
			var custom []string
			var others []graph.Event[tState]
			for _, ev := range without {
				if ev.Kind == graph.EventCustom {
					custom = append(custom, ev.Node)
				} else {
					others = append(others, ev)
				}
			}
			assert.Equal(t, []string{"mid/inner/i2"}, custom)
			assert.Equal(t, describe(others), describe(own(with)), "the run's own events are the same with StreamSubgraphs, the Emit of i2 is in inner's namespace")

			var midNS, innerNS string
			for _, ev := range with {
				switch {
				case ev.Namespace == "":
				case strings.Contains(ev.Namespace, "|"):
					innerNS = ev.Namespace
				default:
					midNS = ev.Namespace
				}
			}
			require.True(t, strings.HasPrefix(midNS, "mid:"), midNS)
			require.True(t, strings.HasPrefix(innerNS, midNS+"|inner:"), innerNS)
			assert.Equal(t, []string{
				" step  0",
				" task_start prep 1",
				" task_end prep 1",
				" step  1",
				" task_start mid 2",
				midNS + " step  0",
				midNS + " task_start mid/m1 1",
				midNS + " task_end mid/m1 1",
				midNS + " step  1",
				midNS + " task_start mid/inner 2",
				innerNS + " step  0",
				innerNS + " task_start mid/inner/i1 1",
				innerNS + " task_end mid/inner/i1 1",
				innerNS + " step  1",
				innerNS + " task_start mid/inner/i2 2",
				innerNS + " custom mid/inner/i2 2",
				innerNS + " task_end mid/inner/i2 2",
				innerNS + " step  2",
				midNS + " task_end mid/inner 2",
				midNS + " step  2",
				" task_end mid 2",
				" step  2",
				" end  2",
			}, describe(with))

			// The subgraphs' states and updates are theirs.
			for _, ev := range with {
				switch {
				case ev.Namespace == innerNS && ev.Kind == graph.EventStep && ev.Step == 2:
					assert.Equal(t, []string{"prep", "m1", "i1", "i2"}, ev.State.Log)
				case ev.Namespace == midNS && ev.Kind == graph.EventTaskEnd && ev.Node == "mid/inner":
					written, _ := tLog.Written(ev.Update)
					assert.Equal(t, []string{"i1", "i2"}, written, "inner's update")
				case ev.Namespace != "" && ev.Kind == graph.EventCustom:
					assert.Equal(t, "from i2", ev.Value)
				}
				assert.Nil(t, ev.Untyped)
			}
			if !checkpointed {
				return
			}
			// The namespaces are those of the subgraphs' checkpoints.
			hist, err := run.History(ctx, graph.Thread("with"), 0)
			require.NoError(t, err)
			var spaces []string
			for _, s := range hist {
				for _, task := range s.Tasks {
					spaces = append(spaces, task.Subgraphs...)
				}
			}
			assert.Equal(t, []string{midNS}, spaces)
			inner, err := mid.History(ctx, graph.Thread("with").In(midNS), 0)
			require.NoError(t, err)
			spaces = nil
			for _, s := range inner {
				for _, task := range s.Tasks {
					spaces = append(spaces, task.Subgraphs...)
				}
			}
			assert.Equal(t, []string{innerNS}, spaces)
		})
	}
}

type qState struct {
	Query string   `json:"query"`
	Hits  []string `json:"hits"`
}

var (
	qQuery = graph.Value(func(s *qState) *string { return &s.Query })
	qHits  = graph.Append(func(s *qState) *[]string { return &s.Hits })
)

// Parallel tasks of one node, each running a subgraph over another state
// type: each run has a namespace of its own, and its states and updates
// come in Untyped.
func TestSubgraphStreamParallelTasks(t *testing.T) {
	sub := graph.New[qState](qQuery, qHits)
	sub.AddNode("fetch", func(_ context.Context, s qState) (graph.Update[qState], error) {
		return graph.Writes(qHits.Add(s.Query + "-hit")), nil
	})
	sub.AddSequence(graph.Start, "fetch", graph.End)
	subRun, err := sub.Compile()
	require.NoError(t, err)

	g := newT()
	g.AddNode("plan", logNode("plan"))
	graph.AddTask(g, "search", func(ctx context.Context, q string) (graph.Update[tState], error) {
		final, err := subRun.Invoke(ctx, qState{Query: q})
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tItems.Add(final.Hits...)), nil
	})
	g.AddEdge(graph.Start, "plan")
	graph.AddFanOut(g, "plan", "search", func(tState) []string { return []string{"a", "b", "c"} })
	g.AddEdge("search", graph.End)
	run := compile(t, g)

	evs := collect(t, run.Stream(context.Background(), tState{}, graph.StreamSubgraphs()))
	byNS := map[string][]graph.Event[tState]{}
	for _, ev := range evs {
		if ev.Namespace != "" {
			byNS[ev.Namespace] = append(byNS[ev.Namespace], ev)
		}
	}
	require.Len(t, byNS, 3, "one namespace per task")
	queries := map[string]bool{}
	for ns, evs := range byNS {
		assert.True(t, strings.HasPrefix(ns, "search:") && !strings.Contains(ns, "|"), ns)
		assert.Equal(t, []string{
			ns + " step  0", ns + " task_start search/fetch 1", ns + " task_end search/fetch 1", ns + " step  1",
		}, describe(evs))
		start, ok := evs[0].Untyped.(qState)
		require.True(t, ok, "the subgraph's state: %T", evs[0].Untyped)
		queries[start.Query] = true
		end, ok := evs[3].Untyped.(qState)
		require.True(t, ok)
		assert.Equal(t, []string{start.Query + "-hit"}, end.Hits, "the events of one namespace are one run's")
		upd, ok := evs[2].Untyped.(graph.Update[qState])
		require.True(t, ok, "the subgraph's update: %T", evs[2].Untyped)
		data, err := json.Marshal(evs[2].Untyped)
		require.NoError(t, err)
		assert.Contains(t, string(data), start.Query+"-hit")
		hits, _ := qHits.Written(upd)
		assert.Equal(t, end.Hits, hits)
		for _, ev := range evs {
			assert.Zero(t, ev.State.Log)
			assert.True(t, ev.Update.Empty())
		}
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, queries)

	// Events limits the subgraphs' events too.
	kinds := map[graph.EventKind]bool{}
	for _, ev := range collect(t, run.Stream(context.Background(), tState{}, graph.StreamSubgraphs(), graph.Events(graph.EventStep))) {
		kinds[ev.Kind] = true
	}
	assert.Equal(t, map[graph.EventKind]bool{graph.EventStep: true}, kinds)
}

// An interrupt inside a subgraph is reported in the subgraph's namespace,
// with its state, before the run's own; the resumed subgraph streams in
// the same namespace.
func TestSubgraphStreamInterrupt(t *testing.T) {
	c := &calls{}
	store := graph.NewMemorySaver()
	g := newT()
	g.AddSubgraph("sub", askingSubgraph(t, c, graph.WithCheckpointer(store)))
	g.AddSequence(graph.Start, "sub", graph.End)
	run := compile(t, g, graph.WithCheckpointer(store))
	ctx := context.Background()

	evs := collect(t, run.Stream(ctx, tState{}, graph.Thread("t"), graph.StreamSubgraphs()))
	var inner, top *graph.Event[tState]
	for i := range evs {
		if evs[i].Kind == graph.EventInterrupt && evs[i].Namespace != "" {
			inner = &evs[i]
		}
		if evs[i].Kind == graph.EventInterrupt && evs[i].Namespace == "" {
			top = &evs[i]
		}
	}
	require.NotNil(t, inner, "the subgraph's interrupt")
	require.NotNil(t, top, "the run's interrupt")
	assert.Equal(t, evs[len(evs)-1], *top, "the run's interrupt ends the stream")
	assert.True(t, strings.HasPrefix(inner.Namespace, "sub:"), inner.Namespace)
	require.Len(t, inner.Interrupts, 1)
	assert.Equal(t, top.Interrupts[0].ID, inner.Interrupts[0].ID)
	assert.Equal(t, "sub/ask", inner.Interrupts[0].Node)
	assert.Equal(t, []string{"prep"}, inner.State.Log, "the subgraph's state before the paused step")

	var resumed []string
	for ev, err := range run.ResumeStream(ctx, graph.Thread("t"), graph.Answer("yes"), graph.StreamSubgraphs()) {
		require.NoError(t, err)
		if ev.Namespace != "" {
			resumed = append(resumed, ev.Namespace)
		}
	}
	require.NotEmpty(t, resumed)
	for _, ns := range resumed {
		assert.Equal(t, inner.Namespace, ns)
	}

	// Without the option, a paused run's stream says nothing of the
	// subgraph.
	for ev, err := range run.Stream(ctx, tState{}, graph.Thread("u")) {
		if err != nil && !errors.Is(err, graph.ErrInterrupted) {
			require.NoError(t, err)
		}
		assert.Empty(t, ev.Namespace)
	}
}

// A node that streams a graph itself gets that graph's stream as it would
// anywhere, whatever its run streams.
func TestSubgraphStreamedByItsNode(t *testing.T) {
	sub := newT()
	sub.AddNode("x", logNode("x"))
	sub.AddSequence(graph.Start, "x", graph.End)
	subRun := compile(t, sub)
	var seen []string
	g := newT()
	g.AddNode("streams", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		for ev, err := range subRun.Stream(ctx, tState{}) {
			if err != nil {
				return graph.Update[tState]{}, err
			}
			seen = append(seen, fmt.Sprintf("%s %s %s", ev.Namespace, ev.Kind, ev.Node))
		}
		return graph.Writes(tLog.Add("streamed")), nil
	})
	g.AddSequence(graph.Start, "streams", graph.End)
	run := compile(t, g)
	for _, err := range run.Stream(context.Background(), tState{}, graph.StreamSubgraphs()) {
		require.NoError(t, err)
	}
	assert.Equal(t, []string{" step ", " task_start x", " task_end x", " step ", " end "}, seen)
}

// A consumer that leaves in the middle of a subgraph's events stops the
// run: Stream returns, and no goroutine is left.
func TestSubgraphStreamConsumerLeaves(t *testing.T) {
	before := runtime.NumGoroutine()
	sub := newT()
	for _, name := range []string{"a", "b"} {
		sub.AddNode(name, func(ctx context.Context, _ tState) (graph.Update[tState], error) {
			for i := range 200 { // more than the stream buffers
				graph.Emit(ctx, i)
			}
			return graph.Writes(tLog.Add(name)), nil
		})
	}
	sub.AddEdge(graph.Start, "a")
	sub.AddEdge(graph.Start, "b")
	sub.AddEdge("a", graph.End)
	sub.AddEdge("b", graph.End)
	subRun := compile(t, sub)
	g := newT()
	graph.AddTask(g, "fan", func(ctx context.Context, _ int) (graph.Update[tState], error) {
		_, err := subRun.Invoke(ctx, tState{})
		return graph.Update[tState]{}, err
	})
	graph.AddFanOut(g, graph.Start, "fan", func(tState) []int { return []int{1, 2, 3} })
	g.AddEdge("fan", graph.End)
	run := compile(t, g)
	for range 20 {
		for ev := range run.Stream(context.Background(), tState{}, graph.StreamSubgraphs()) {
			if ev.Namespace != "" && ev.Kind == graph.EventTaskStart {
				break
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before)
}
