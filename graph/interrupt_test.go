package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// runs counts node executions by key.
type runs struct{ m sync.Map }

func (r *runs) add(k string) {
	n, _ := r.m.LoadOrStore(k, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
}

func (r *runs) get(k string) int {
	n, ok := r.m.Load(k)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

// askFanOut fans out to items; items in ask interrupt with a question and
// add the answer.
func askFanOut(t *testing.T, saver graph.Checkpointer, items, ask []string, n *runs) *graph.Compiled[tState] {
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[tState], error) {
		n.add(item)
		for _, a := range ask {
			if a == item {
				ans, err := graph.Interrupt[string](ctx, "what about "+item+"?")
				if err != nil {
					return graph.Update[tState]{}, err
				}
				return graph.Writes(tItems.Add(item + "=" + ans)), nil
			}
		}
		return graph.Writes(tItems.Add(item)), nil
	})
	g.AddNode("join", logNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []string { return items })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return compile(t, g, graph.WithCheckpointer(saver))
}

func TestParallelInterruptsAnsweredByID(t *testing.T) {
	var n runs
	c := askFanOut(t, graph.NewMemorySaver(), []string{"a", "b", "c"}, []string{"a", "c"}, &n)
	ctx := context.Background()
	st, err := c.Invoke(ctx, tState{}, graph.Thread("p"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, graph.ErrInterrupted)
	assert.Equal(t, []string{"split"}, st.Log, "the state before the paused step")
	require.Len(t, ie.Interrupts, 2)
	assert.Equal(t, "p", ie.Thread)
	for i, want := range []struct {
		task int
		q    string
	}{{0, "what about a?"}, {2, "what about c?"}} {
		pi := ie.Interrupts[i]
		assert.Equal(t, graph.InterruptNode, pi.Kind)
		assert.Equal(t, "work", pi.Node)
		assert.Equal(t, want.task, pi.Task)
		assert.Equal(t, 2, pi.Step)
		q, err := graph.PayloadOf[string](pi)
		require.NoError(t, err)
		assert.Equal(t, want.q, q)
	}
	assert.Contains(t, err.Error(), ie.Interrupts[0].ID)

	// One Answer for two interrupts is ambiguous.
	_, err = c.Resume(ctx, graph.Thread("p"), graph.Answer("x"))
	require.ErrorIs(t, err, graph.ErrBadAnswer)
	assert.Contains(t, err.Error(), "graph.AnswerFor")
	assert.Contains(t, err.Error(), ie.Interrupts[1].ID)
	_, err = c.Resume(ctx, graph.Thread("p"), graph.AnswerFor("nope", "x"))
	require.ErrorIs(t, err, graph.ErrBadAnswer)
	assert.Contains(t, err.Error(), `no interrupt "nope"`)

	out, err := c.Resume(ctx, graph.Thread("p"), graph.AnswerFor(ie.Interrupts[1].ID, "yes-c"), graph.AnswerFor(ie.Interrupts[0].ID, "yes-a"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a=yes-a", "b", "c=yes-c"}, out.Items, "merged in task order")
	assert.Equal(t, []string{"split", "join"}, out.Log)
	assert.Equal(t, 2, n.get("a"))
	assert.Equal(t, 1, n.get("b"), "the task that finished in the paused step did not run again")
	assert.Equal(t, 2, n.get("c"))

	_, err = c.Resume(ctx, graph.Thread("p"), graph.Answer("late"))
	require.ErrorIs(t, err, graph.ErrBadAnswer, "a finished thread has nothing to answer")
}

func TestPartialAnswersKeepTheRestWaiting(t *testing.T) {
	var n runs
	saver := graph.NewMemorySaver()
	c := askFanOut(t, saver, []string{"a", "b"}, []string{"a", "b"}, &n)
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("pa"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	_, err = c.Resume(ctx, graph.Thread("pa"), graph.AnswerFor(ie.Interrupts[0].ID, "one"))
	var again *graph.InterruptError
	require.ErrorAs(t, err, &again)
	require.Len(t, again.Interrupts, 1)
	assert.Equal(t, ie.Interrupts[1].ID, again.Interrupts[0].ID)
	assert.Equal(t, 2, n.get("a"), "the answered task ran")
	assert.Equal(t, 1, n.get("b"), "the waiting task did not")

	snap, err := c.State(ctx, graph.Thread("pa"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)

	out, err := c.Resume(ctx, graph.Thread("pa"), graph.Answer("two"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a=one", "b=two"}, out.Items)
	assert.Equal(t, 2, n.get("a"), "a finished at the partial resume and did not run again")
}

func TestSeveralInterruptsInOneNodeMatchInOrder(t *testing.T) {
	var calls atomic.Int32
	g := newT()
	g.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		calls.Add(1)
		name, err := graph.Interrupt[string](ctx, "name?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		age, err := graph.Interrupt[int](ctx, "age of "+name+"?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tLog.Add(fmt.Sprintf("%s is %d", name, age)), tN.Set(age)), nil
	})
	g.AddSequence(graph.Start, "ask", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()

	_, err := c.Invoke(ctx, tState{}, graph.Thread("o"))
	var first *graph.InterruptError
	require.ErrorAs(t, err, &first)
	_, err = c.Resume(ctx, graph.Thread("o"), graph.Answer("Ada"))
	var second *graph.InterruptError
	require.ErrorAs(t, err, &second)
	require.Len(t, second.Interrupts, 1)
	assert.NotEqual(t, first.Interrupts[0].ID, second.Interrupts[0].ID)
	q, err := graph.PayloadOf[string](second.Interrupts[0])
	require.NoError(t, err)
	assert.Equal(t, "age of Ada?", q, "the second call sees the first answer")

	out, err := c.Resume(ctx, graph.Thread("o"), graph.Answer(36))
	require.NoError(t, err)
	assert.Equal(t, []string{"Ada is 36"}, out.Log)
	assert.Equal(t, int32(3), calls.Load(), "the node ran from its start each time")
}

func TestAnswerOfTheWrongTypeIsSetAside(t *testing.T) {
	g := newT()
	g.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		n, err := graph.Interrupt[int](ctx, "how many?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tN.Set(n)), nil
	})
	g.AddSequence(graph.Start, "ask", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("w"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	_, err = c.Resume(ctx, graph.Thread("w"), graph.Answer("lots"))
	var ae *graph.AnswerError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "int", ae.Want)
	assert.Contains(t, err.Error(), "still waits")
	snap, err := c.State(ctx, graph.Thread("w"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the interrupt still waits")

	out, err := c.Resume(ctx, graph.Thread("w"), graph.Answer(7))
	require.NoError(t, err)
	assert.Equal(t, 7, out.N)
}

func TestIgnoredInterruptStillPauses(t *testing.T) {
	g := newT()
	g.AddNode("sloppy", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		v, _ := graph.Interrupt[string](ctx, "?")
		return graph.Writes(tLog.Add("got " + v)), nil
	})
	g.AddSequence(graph.Start, "sloppy", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("s"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := c.Resume(context.Background(), graph.Thread("s"), graph.Answer("it"))
	require.NoError(t, err)
	assert.Equal(t, []string{"got it"}, out.Log)
}

func TestInterruptNeedsACheckpointer(t *testing.T) {
	g := newT()
	g.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		_, err := graph.Interrupt[string](ctx, "?")
		return graph.Update[tState]{}, err
	})
	g.AddSequence(graph.Start, "ask", graph.End)
	_, err := compile(t, g).Invoke(context.Background(), tState{})
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	assert.Contains(t, err.Error(), "graph.Thread")
	assert.NotErrorIs(t, err, graph.ErrInterrupted)
}

func TestInterruptIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	g := newT()
	g.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		calls.Add(1)
		_, err := graph.Interrupt[string](ctx, "?")
		return graph.Update[tState]{}, err
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5}))
	g.AddSequence(graph.Start, "ask", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("r"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	assert.Equal(t, int32(1), calls.Load())
}

func TestStreamEndsWithTheInterrupt(t *testing.T) {
	var n runs
	c := askFanOut(t, graph.NewMemorySaver(), []string{"a", "b"}, []string{"b"}, &n)
	var kinds []string
	var last graph.Event[tState]
	for ev, err := range c.Stream(context.Background(), tState{}, graph.Thread("st")) {
		require.NoError(t, err, "pausing is not an error of the stream")
		kinds = append(kinds, fmt.Sprintf("%s:%s", ev.Kind, ev.Node))
		last = ev
	}
	assert.Equal(t, graph.EventInterrupt, last.Kind)
	require.Len(t, last.Interrupts, 1)
	assert.Equal(t, 2, last.Step)
	assert.Equal(t, []string{"split"}, last.State.Log)
	starts, ends := 0, 0
	for _, k := range kinds {
		switch k {
		case "task_start:work":
			starts++
		case "task_end:work":
			ends++
		}
	}
	assert.Equal(t, 2, starts)
	assert.Equal(t, 1, ends, "the paused task has no end event: the interrupt event reports it")
	var resumed []graph.EventKind
	for ev, err := range c.ResumeStream(context.Background(), graph.Thread("st"), graph.Answer("ok")) {
		require.NoError(t, err)
		resumed = append(resumed, ev.Kind)
		if ev.Kind == graph.EventEnd {
			assert.Equal(t, []string{"a", "b=ok"}, ev.State.Items)
		}
	}
	assert.Equal(t, graph.EventEnd, resumed[len(resumed)-1])
}

func TestStaticBreakpoints(t *testing.T) {
	var n runs
	build := func(saver graph.Checkpointer, opts ...graph.Option) *graph.Compiled[tState] {
		g := newT()
		for _, name := range []string{"plan", "act", "report"} {
			g.AddNode(name, func(context.Context, tState) (graph.Update[tState], error) {
				n.add(name)
				return graph.Writes(tLog.Add(name)), nil
			})
		}
		g.AddSequence(graph.Start, "plan", "act", "report", graph.End)
		return compile(t, g, append(opts, graph.WithCheckpointer(saver))...)
	}
	ctx := context.Background()
	saver := graph.NewMemorySaver()
	c := build(saver, graph.WithInterruptBefore("act"), graph.WithInterruptAfter("act"))

	st, err := c.Invoke(ctx, tState{}, graph.Thread("bp"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, []string{"plan"}, st.Log)
	require.Len(t, ie.Interrupts, 1)
	before := ie.Interrupts[0]
	assert.Equal(t, graph.InterruptBefore, before.Kind)
	assert.Equal(t, "act", before.Node)
	assert.Empty(t, before.Payload)
	assert.Equal(t, 0, n.get("act"))

	snap, err := c.State(ctx, graph.Thread("bp"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, before.ID, snap.Interrupts[0].ID)

	// In another instance: Resume releases the breakpoint; the run stops
	// again after act.
	c2 := build(saver, graph.WithInterruptBefore("act"), graph.WithInterruptAfter("act"))
	st, err = c2.Resume(ctx, graph.Thread("bp"))
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, []string{"plan", "act"}, st.Log)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, graph.InterruptAfter, ie.Interrupts[0].Kind)
	assert.Equal(t, -1, ie.Interrupts[0].Task)

	_, err = c2.Resume(ctx, graph.Thread("bp"), graph.Answer("yes"))
	require.ErrorIs(t, err, graph.ErrBadAnswer, "a breakpoint takes no answer")
	out, err := c2.Resume(ctx, graph.Thread("bp"))
	require.NoError(t, err)
	assert.Equal(t, []string{"plan", "act", "report"}, out.Log)
	assert.Equal(t, 1, n.get("act"))
}

func TestReleasedBreakpointSurvivesAFailure(t *testing.T) {
	// The gated node fails on its first run after the release; resuming
	// again must not stop at the breakpoint a second time.
	var fail atomic.Bool
	fail.Store(true)
	g := newT()
	g.AddNode("act", func(context.Context, tState) (graph.Update[tState], error) {
		if fail.Swap(false) {
			return graph.Update[tState]{}, errBoom
		}
		return graph.Writes(tLog.Add("act")), nil
	})
	g.AddSequence(graph.Start, "act", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithInterruptBefore("act"))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("rf"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = c.Resume(ctx, graph.Thread("rf"))
	require.ErrorIs(t, err, errBoom)
	out, err := c.Resume(ctx, graph.Thread("rf"))
	require.NoError(t, err)
	assert.Equal(t, []string{"act"}, out.Log)
}

func TestBreakpointCompileErrors(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	_, err := g.Compile(graph.WithInterruptBefore("a"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs a checkpointer")
	_, err = g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithInterruptAfter("ghost"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown node "ghost"`)
	_, err = g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithMaxCheckpointBytes(0))
	assert.ErrorContains(t, err, "size limit")
}

func TestInterruptInsideSubgraphs(t *testing.T) {
	inner := newT()
	inner.AddNode("prep", logNode("prep"))
	graph.AddTask(inner, "ask", func(ctx context.Context, who string) (graph.Update[tState], error) {
		ans, err := graph.Interrupt[string](ctx, who)
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tItems.Add(who + ":" + ans)), nil
	})
	inner.AddEdge(graph.Start, "prep")
	graph.AddFanOut(inner, "prep", "ask", func(tState) []string { return []string{"x", "y"} })
	inner.AddEdge("ask", graph.End)
	sub := compile(t, inner)

	var outerRuns atomic.Int32
	g := newT()
	g.AddNode("first", func(context.Context, tState) (graph.Update[tState], error) {
		outerRuns.Add(1)
		return graph.Writes(tLog.Add("first")), nil
	})
	g.AddSubgraph("sub", sub)
	g.AddSequence(graph.Start, "first", "sub", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()

	_, err := c.Invoke(ctx, tState{}, graph.Thread("sg"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2, "both parallel inner tasks asked")
	byPayload := map[string]string{}
	for _, pi := range ie.Interrupts {
		assert.Equal(t, "sub/ask", pi.Node)
		who, err := graph.PayloadOf[string](pi)
		require.NoError(t, err)
		byPayload[who] = pi.ID
	}
	out, err := c.Resume(ctx, graph.Thread("sg"), graph.AnswerFor(byPayload["y"], "why"), graph.AnswerFor(byPayload["x"], "ex"))
	require.NoError(t, err)
	assert.Equal(t, []string{"x:ex", "y:why"}, out.Items, "each inner task got its own answer")
	assert.Equal(t, int32(1), outerRuns.Load())

	// A mapped subgraph pauses its parent's task the same way.
	m := newT()
	graph.AddMappedSubgraph(m, "mapped", sub, func(s tState) tState { return tState{} },
		func(s tState) graph.Update[tState] { return graph.Writes(tItems.Add(s.Items...)) })
	m.AddSequence(graph.Start, "mapped", graph.End)
	mc := compile(t, m, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err = mc.Invoke(ctx, tState{}, graph.Thread("m"))
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2)
	answers := []graph.RunOption{graph.Thread("m")}
	for _, pi := range ie.Interrupts {
		who, _ := graph.PayloadOf[string](pi)
		answers = append(answers, graph.AnswerFor(pi.ID, strings.ToUpper(who)))
	}
	out, err = mc.Resume(ctx, answers...)
	require.NoError(t, err)
	assert.Equal(t, []string{"x:X", "y:Y"}, out.Items)
}

func TestCheckpointSizeLimit(t *testing.T) {
	g := newT()
	g.AddNode("big", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tLog.Add(strings.Repeat("x", 2000))), nil
	})
	g.AddSequence(graph.Start, "big", graph.End)
	saver := graph.NewMemorySaver()
	c := compile(t, g, graph.WithCheckpointer(saver), graph.WithMaxCheckpointBytes(1000))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("big"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "graph.WithMaxCheckpointBytes")

	// Stored data over the limit is refused before it is decoded.
	state, _ := json.Marshal(tState{Log: []string{strings.Repeat("y", 5000)}})
	require.NoError(t, saver.Put(context.Background(), &graph.Checkpoint{Thread: "stored", ID: "1", State: state, Next: []graph.PendingTask{{Node: "big"}}}))
	_, err = c.State(context.Background(), graph.Thread("stored"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	_, err = c.Resume(context.Background(), graph.Thread("stored"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
}

func TestNewerCheckpointFormatIsRefused(t *testing.T) {
	saver := graph.NewMemorySaver()
	require.NoError(t, saver.Put(context.Background(), &graph.Checkpoint{Format: graph.CheckpointFormat + 1, Thread: "f", ID: "1", State: json.RawMessage(`{}`)}))
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(saver))
	_, err := c.Resume(context.Background(), graph.Thread("f"))
	require.ErrorIs(t, err, graph.ErrCheckpointFormat)
	assert.Contains(t, err.Error(), "upgrade")
}

func TestUpdateStateAsNodeRoutesFromIt(t *testing.T) {
	g := newT()
	g.AddNode("draft", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tN.Set(1)), nil
	})
	g.AddNode("fix", logNode("fix"))
	g.AddNode("ship", logNode("ship"))
	g.AddEdge(graph.Start, "draft")
	g.AddConditional("draft", func(s tState) graph.Route {
		if s.N > 5 {
			return graph.Goto("ship")
		}
		return graph.Goto("fix")
	}, "fix", "ship")
	g.AddEdge("fix", "ship")
	g.AddEdge("ship", graph.End)
	saver := graph.NewMemorySaver()
	c := compile(t, g, graph.WithCheckpointer(saver), graph.WithInterruptAfter("draft"))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("u"), graph.RunID("run-7"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	snap, err := c.State(ctx, graph.Thread("u"))
	require.NoError(t, err)
	assert.Equal(t, []string{"fix"}, snap.Next)
	assert.Equal(t, "run-7", snap.Run)

	// As if draft had written N=9: the router now picks ship.
	snap, err = c.UpdateState(ctx, graph.Thread("u"), graph.Writes(tN.Set(9)), graph.AsNode("draft"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ship"}, snap.Next)
	assert.Equal(t, graph.SourceUpdate, snap.Source)
	assert.Equal(t, []string{"draft"}, snap.Ran)
	require.Len(t, snap.Interrupts, 1, "an update as draft is still after draft")
	out, err := c.Resume(ctx, graph.Thread("u"))
	require.NoError(t, err)
	assert.Equal(t, 9, out.N)
	assert.Equal(t, []string{"ship"}, out.Log)

	_, err = c.UpdateState(ctx, graph.Thread("u"), graph.Writes(tN.Set(1)), graph.AsNode("nowhere"))
	assert.ErrorContains(t, err, `no such node (nodes: draft, fix, ship)`)
	snap, err = c.UpdateState(ctx, graph.Thread("u"), graph.Writes(tN.Set(1)).Goto("fix"))
	require.NoError(t, err, "an update's Goto adds to the pending step")
	assert.Equal(t, []string{"fix"}, snap.Next)
	_, err = c.UpdateState(ctx, graph.Thread("nothread"), graph.Writes(tN.Set(1)))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
	other := graph.Value(func(s *tState) *bool { return &s.Flag })
	_, err = c.UpdateState(ctx, graph.Thread("u"), graph.Writes(other.Set(true)))
	assert.ErrorContains(t, err, "not declared")
}

func TestAnswersNeedAThread(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := c.Resume(context.Background(), graph.Answer(1))
	assert.ErrorContains(t, err, "need graph.Thread")
	_, err = c.Invoke(context.Background(), tState{}, graph.Ref{Checkpoint: "x"})
	assert.ErrorContains(t, err, "need graph.Thread")
}

// FuzzResumeFromStoredBytes resumes threads whose stored checkpoint and task
// records are arbitrary bytes: the engine decodes them only into its own
// types and fails with an error, never a panic.
func FuzzResumeFromStoredBytes(f *testing.F) {
	f.Add([]byte(`{"Log":["a"],"N":1}`), []byte(`"x"`), []byte(`{"writes":[{"field":"N","op":"set","value":2}]}`), "work", 0)
	f.Add([]byte(`{}`), []byte(`null`), []byte(`{"writes":[{"field":"Items","op":"add","value":"notalist"}]}`), "split", 1)
	f.Add([]byte(`[]`), []byte(`{"a":1}`), []byte(`{"goto":["ghost"],"sends":[{"node":"work","arg":7}]}`), "join", -1)
	f.Fuzz(func(t *testing.T, state, arg, update []byte, node string, task int) {
		saver := graph.NewMemorySaver()
		var n runs
		c := askFanOut(t, saver, []string{"a"}, nil, &n)
		cp := &graph.Checkpoint{Thread: "fz", ID: "1", State: state,
			Next: []graph.PendingTask{{Node: "work", Arg: arg}, {Node: node}}}
		if err := saver.Put(context.Background(), cp); err != nil {
			return
		}
		_ = saver.PutWrites(context.Background(), graph.Thread("fz").At("1"), "", graph.TaskWrite{Task: task, Node: node, Update: update})
		_, _ = c.State(context.Background(), graph.Thread("fz"))
		_, err := c.Resume(context.Background(), graph.Thread("fz"))
		if err != nil && errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("no interrupt was stored, yet: %v", err)
		}
	})
}

func TestStateShowsThePendingStepsTasks(t *testing.T) {
	var n runs
	c := askFanOut(t, graph.NewMemorySaver(), []string{"a", "b"}, []string{"b"}, &n)
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("ts"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	snap, err := c.State(context.Background(), graph.Thread("ts"))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
	a, b := snap.Tasks[0], snap.Tasks[1]
	assert.Equal(t, "work", a.Node)
	assert.Equal(t, "a", a.Arg)
	assert.True(t, a.Done)
	items, ok := tItems.Written(a.Update)
	assert.True(t, ok)
	assert.Equal(t, []string{"a"}, items)
	assert.False(t, b.Done)
	require.Len(t, b.Interrupts, 1)
	assert.True(t, b.Interrupts[0].Pending())
	assert.Equal(t, snap.Interrupts, b.Waiting())
}
