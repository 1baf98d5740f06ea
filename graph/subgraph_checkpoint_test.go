package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// In a checkpointed run, each EventStep names the checkpoint its state is
// stored as — the run's own and, with StreamSubgraphs, its subgraphs',
// nested ones too — and each is the checkpoint the store holds: its
// namespace, its parent, its pending tasks, and the checkpoints of the
// runs above it.
func TestStepCheckpointOfSubgraphs(t *testing.T) {
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) { testStepCheckpointOfSubgraphs(t, mode) })
	}
}

func testStepCheckpointOfSubgraphs(t *testing.T, mode graph.DurabilityMode) {
	store := graph.NewMemorySaver()
	run, midRun := twoLevels(t, graph.WithCheckpointer(store))
	ctx := context.Background()
	evs := collect(t, run.Stream(ctx, tState{}, graph.Thread("t"), graph.StreamSubgraphs(), graph.Durability(mode)))

	byID := map[string]*graph.StepCheckpoint{}
	nss := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind != graph.EventStep {
			assert.Nil(t, ev.Checkpoint, "%s %s", ev.Namespace, ev.Kind)
			continue
		}
		cp := ev.Checkpoint
		require.NotNil(t, cp, "step %d of %q", ev.Step, ev.Namespace)
		assert.Equal(t, ev.Namespace, cp.Ref.Namespace, "a subgraph's checkpoint is in its namespace")
		assert.Equal(t, "t", cp.Ref.Thread)
		assert.Equal(t, ev.Step, cp.Step)
		nss[ev.Namespace] = true
		byID[cp.Ref.Checkpoint] = cp

		// What the store holds of it.
		stored, err := store.Get(ctx, cp.Ref)
		require.NoError(t, err)
		assert.Equal(t, stored.Parent, cp.Parent)
		assert.Equal(t, stored.Source, cp.Source)
		assert.Equal(t, stored.Run, cp.Run)
		if len(stored.Next) > 0 || len(cp.Next) > 0 {
			assert.Equal(t, stored.Next, cp.Next)
		}

		// The runs above it: one per level, outermost first, each a
		// checkpoint whose pending step holds the task that ran the next
		// level (its ID in the namespace).
		levels := strings.Split(ev.Namespace, "|")
		if ev.Namespace == "" {
			assert.Empty(t, cp.Parents)
			continue
		}
		require.Len(t, cp.Parents, len(levels))
		for i, p := range cp.Parents {
			assert.Equal(t, strings.Join(levels[:i], "|"), p.Namespace)
			above, err := store.Get(ctx, p)
			require.NoError(t, err)
			node, id, _ := strings.Cut(levels[i], ":")
			assert.Contains(t, above.Next, graph.PendingTask{ID: id, Node: node})
		}
	}
	require.Len(t, nss, 3, "the run's, mid's and inner's: %v", nss)

	// The subgraph's state is read at its checkpoint on its own graph.
	for _, ev := range evs {
		if ev.Kind == graph.EventStep && strings.Count(ev.Namespace, "|") == 0 && ev.Namespace != "" {
			snap, err := midRun.State(ctx, ev.Checkpoint.Ref)
			require.NoError(t, err)
			assert.Equal(t, ev.State, snap.State)
			assert.Equal(t, ev.Checkpoint.Ref.Checkpoint, snap.CheckpointID)
		}
	}

	// Without a checkpointer no event names one.
	plain, _ := twoLevels(t)
	for _, ev := range collect(t, plain.Stream(ctx, tState{}, graph.StreamSubgraphs())) {
		assert.Nil(t, ev.Checkpoint)
	}
}

// A node that streams a compiled graph itself gets its events; with
// StreamSubgraphs its run's stream gets them too, under the node's
// namespace — and not without it. The node's own consumer sees the same
// stream either way.
func TestSubgraphStreamedByItsNodePassesUp(t *testing.T) {
	for _, checkpointed := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointed=%v", checkpointed), func(t *testing.T) {
			var opts []graph.Option
			var store *graph.MemorySaver
			if checkpointed {
				store = graph.NewMemorySaver()
				opts = append(opts, graph.WithCheckpointer(store))
			}
			sub := newT()
			sub.AddNode("x", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
				graph.Emit(ctx, "from x")
				return graph.Writes(tLog.Add("x")), nil
			})
			sub.AddNode("y", logNode("y"))
			sub.AddSequence(graph.Start, "x", "y", graph.End)
			subRun := compile(t, sub, opts...)
			var seen []string
			g := newT()
			g.AddNode("streams", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
				seen = seen[:0]
				for ev, err := range subRun.Stream(ctx, tState{}, graph.Events(graph.EventTaskEnd, graph.EventCustom, graph.EventEnd)) {
					if err != nil {
						return graph.Update[tState]{}, err
					}
					seen = append(seen, fmt.Sprintf("%q %s %s", ev.Namespace, ev.Kind, ev.Node))
				}
				return graph.Writes(tLog.Add("streamed")), nil
			})
			g.AddSequence(graph.Start, "streams", graph.End)
			run := compile(t, g, opts...)
			ownStream := []string{`"" custom x`, `"" task_end x`, `"" task_end y`, `"" end `}
			runOpts := func(thread string, more ...graph.RunOption) []graph.RunOption {
				if checkpointed {
					more = append(more, graph.Thread(thread))
				}
				return more
			}

			evs := collect(t, run.Stream(context.Background(), tState{}, runOpts("t", graph.StreamSubgraphs())...))
			assert.Equal(t, ownStream, seen, "the node's own stream")
			var up []graph.Event[tState]
			for _, ev := range evs {
				if ev.Namespace != "" {
					up = append(up, ev)
				}
			}
			require.NotEmpty(t, up)
			ns := up[0].Namespace
			assert.True(t, strings.HasPrefix(ns, "streams:"), ns)
			var got []string
			for _, ev := range up {
				assert.Equal(t, ns, ev.Namespace)
				got = append(got, fmt.Sprintf("%s %s %d", ev.Kind, ev.Node, ev.Step))
			}
			assert.Equal(t, []string{
				"step  0",
				"task_start streams/x 1", "custom streams/x 1", "task_end streams/x 1", "step  1",
				"task_start streams/y 2", "task_end streams/y 2", "step  2",
			}, got, "every event of the graph the node streams, as a subgraph's")
			assert.Equal(t, []string{"x", "y"}, up[len(up)-1].State.Log, "with its state")
			// Those come before the node's own end.
			last := -1
			for i, ev := range evs {
				if ev.Namespace != "" {
					last = i
				}
			}
			assert.Equal(t, graph.EventTaskEnd, evs[last+1].Kind)
			assert.Equal(t, "streams", evs[last+1].Node)

			if checkpointed {
				snaps, err := run.History(context.Background(), graph.Thread("t"), 0)
				require.NoError(t, err)
				var spaces []string
				for _, s := range snaps {
					for _, ts := range s.Tasks {
						spaces = append(spaces, ts.Subgraphs...)
					}
				}
				assert.Contains(t, spaces, ns, "the namespace the graph checkpointed under")
				for _, ev := range up {
					if ev.Kind == graph.EventStep {
						require.NotNil(t, ev.Checkpoint)
						assert.Equal(t, ns, ev.Checkpoint.Ref.Namespace)
					}
				}
			}

			// Without StreamSubgraphs: the run's own events and the Emit of
			// the graph its node streams, which goes to the node alone.
			evs = collect(t, run.Stream(context.Background(), tState{}, runOpts("u")...))
			assert.Equal(t, ownStream, seen)
			for _, ev := range evs {
				assert.Empty(t, ev.Namespace)
				assert.NotEqual(t, graph.EventCustom, ev.Kind)
			}
		})
	}
}

// A node's consumer that leaves the graph it streams in the middle stops
// that graph, not the run streaming its subgraphs.
func TestSubgraphStreamedByItsNodeConsumerLeaves(t *testing.T) {
	sub := newT()
	sub.AddNode("x", logNode("x"))
	sub.AddNode("y", logNode("y"))
	sub.AddSequence(graph.Start, "x", "y", graph.End)
	subRun := compile(t, sub)
	g := newT()
	g.AddNode("peeks", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		for ev, err := range subRun.Stream(ctx, tState{}) {
			if err != nil {
				return graph.Update[tState]{}, err
			}
			if ev.Kind == graph.EventStep {
				break // the first event: the state it starts from
			}
		}
		return graph.Writes(tLog.Add("peeked")), nil
	})
	g.AddSequence(graph.Start, "peeks", graph.End)
	run := compile(t, g)
	var ran []string
	var final tState
	for ev, err := range run.Stream(context.Background(), tState{}, graph.StreamSubgraphs()) {
		require.NoError(t, err)
		if ev.Kind == graph.EventTaskStart && ev.Namespace != "" {
			ran = append(ran, ev.Node)
		}
		if ev.Kind == graph.EventEnd {
			final = ev.State
		}
	}
	assert.Empty(t, ran, "the graph stopped at its consumer's break")
	assert.Equal(t, []string{"peeked"}, final.Log)
}

// A graph a node of a checkpointed run streams with StreamSubgraphs
// checkpoints in a namespace of the run's thread; its own events (its
// nodes' Emits among them) come to the node without a namespace all the
// same, its subgraphs' with theirs.
func TestSubgraphStreamedByItsNodeWithItsOwnSubgraphs(t *testing.T) {
	store := graph.NewMemorySaver()
	_, inner := twoLevels(t, graph.WithCheckpointer(store))
	outer := newT()
	outer.AddNode("m1", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		graph.Emit(ctx, "from m1")
		return graph.Writes(tLog.Add("m1")), nil
	})
	outer.AddSubgraph("inner", inner)
	outer.AddSequence(graph.Start, "m1", "inner", graph.End)
	midRun := compile(t, outer, graph.WithCheckpointer(store))
	var own, nested []string
	g := newT()
	g.AddNode("streams", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		for ev, err := range midRun.Stream(ctx, tState{}, graph.StreamSubgraphs(), graph.Events(graph.EventCustom, graph.EventTaskEnd)) {
			if err != nil {
				return graph.Update[tState]{}, err
			}
			if ev.Namespace == "" {
				own = append(own, ev.Kind.String()+" "+ev.Node)
			} else {
				nested = append(nested, ev.Kind.String()+" "+ev.Node)
			}
		}
		return graph.Update[tState]{}, nil
	})
	g.AddSequence(graph.Start, "streams", graph.End)
	run := compile(t, g, graph.WithCheckpointer(store))
	collect(t, run.Stream(context.Background(), tState{}, graph.Thread("t")))
	assert.Equal(t, []string{"custom m1", "task_end m1", "task_end inner"}, own)
	assert.Equal(t, []string{"task_end inner/m1", "task_end inner/inner/i1", "custom inner/inner/i2", "task_end inner/inner/i2", "task_end inner/inner"}, nested)
}
