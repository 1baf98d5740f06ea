package temporalgraph_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// asker is a graph whose step 1 runs "ask", which asks "approve?", beside
// "other"; "after" follows both. It counts the runs of ask and other and
// records the answers ask saw.
type asker struct {
	askRuns, otherRuns atomic.Int32
	mu                 sync.Mutex
	seen               []string
	// gate, when not nil, holds ask's first run until it is closed.
	gate chan struct{}
}

func (a *asker) graph(t *testing.T, opts ...graph.Option) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("ask", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		if a.askRuns.Add(1) == 1 && a.gate != nil {
			<-a.gate
		}
		answer, err := graph.Interrupt[string](ctx, "approve?")
		if err != nil {
			return graph.Update[graphtest.State]{}, err
		}
		a.mu.Lock()
		a.seen = append(a.seen, answer)
		a.mu.Unlock()
		return graph.Writes(graphtest.Log.Add("ask: " + answer)), nil
	})
	g.AddNode("other", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		a.otherRuns.Add(1)
		return graph.Writes(graphtest.Log.Add("other"), graphtest.N.Set(7)), nil
	})
	g.AddNode("after", graphtest.LogNode("after"))
	g.AddEdge(graph.Start, "ask")
	g.AddEdge(graph.Start, "other")
	g.AddJoin([]string{"ask", "other"}, "after")
	g.AddEdge("after", graph.End)
	return tgCompile(t, g, opts...)
}

func (a *asker) answers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// queryProgress queries the run's progress from entry from.
func queryProgress(t *testing.T, env *testsuite.TestWorkflowEnvironment, from int) temporalgraph.Progress {
	t.Helper()
	v, err := env.QueryWorkflow(temporalgraph.QueryProgress, from)
	require.NoError(t, err)
	var p temporalgraph.Progress
	require.NoError(t, v.Get(&p))
	return p
}

// updateResult is what the test environment told of an Update.
type updateResult struct {
	accepted, completed bool
	rejected, err       error
}

func (u *updateResult) callbacks() *testsuite.TestUpdateCallback {
	return &testsuite.TestUpdateCallback{
		OnAccept:   func() { u.accepted = true },
		OnReject:   func(err error) { u.rejected = err },
		OnComplete: func(_ any, err error) { u.completed, u.err = true, err },
	}
}

// The same graph in-process: the interrupt pauses the run, Resume answers.
func askInProcess(t *testing.T) graphtest.State {
	var a asker
	c := a.graph(t, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, graphtest.State{}, graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := c.Resume(ctx, graph.Thread("t"), graph.Answer("yes"))
	require.NoError(t, err)
	require.Equal(t, []string{"yes"}, a.answers())
	return out
}

func TestInterruptAnsweredByUpdate(t *testing.T) {
	want := askInProcess(t)

	var a asker
	g := newGraph(t, "ask", a.graph(t), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	g.Register(env)

	var waiting, stillWaiting temporalgraph.Progress
	var otherRunsWhileWaiting int32
	var bad, good updateResult
	env.RegisterDelayedCallback(func() {
		waiting = queryProgress(t, env, 0)
		otherRunsWhileWaiting = a.otherRuns.Load()
		env.UpdateWorkflow(temporalgraph.UpdateAnswer, "u0", bad.callbacks(),
			temporalgraph.AnswerArg{ID: "no-such-interrupt", Value: json.RawMessage(`"no"`)})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		stillWaiting = queryProgress(t, env, 0)
		if len(stillWaiting.Interrupts) == 1 {
			env.UpdateWorkflow(temporalgraph.UpdateAnswer, "u1", good.callbacks(),
				temporalgraph.AnswerArg{ID: stillWaiting.Interrupts[0].ID, Value: json.RawMessage(`"yes"`)})
		}
	}, 2*time.Minute)

	got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)

	// While it waited, the run listed the interrupt and the task.
	require.Len(t, waiting.Interrupts, 1)
	pi := waiting.Interrupts[0]
	assert.NotEmpty(t, pi.ID)
	assert.Equal(t, "ask", pi.Node)
	assert.Equal(t, graph.InterruptNode, pi.Kind)
	assert.Equal(t, 1, pi.Step)
	assert.Equal(t, 0, pi.Task)
	payload, err := graph.PayloadOf[string](pi)
	require.NoError(t, err)
	assert.Equal(t, "approve?", payload)
	assert.Equal(t, []temporalgraph.TaskRef{{Step: 1, Node: "ask", Task: 0}}, waiting.Running, "other has finished; ask waits")
	assert.False(t, waiting.Done)
	assert.Equal(t, int32(1), otherRunsWhileWaiting)

	// The answer to no interrupt was refused by the validator, and the run
	// went on waiting.
	require.Error(t, bad.rejected, "the update to an unknown interrupt was not rejected")
	assert.Contains(t, bad.rejected.Error(), "no-such-interrupt")
	assert.Contains(t, bad.rejected.Error(), pi.ID, "the refusal lists what the run waits for")
	assert.False(t, bad.accepted)
	assert.False(t, bad.completed)
	require.Len(t, stillWaiting.Interrupts, 1)
	assert.Equal(t, pi.ID, stillWaiting.Interrupts[0].ID)

	// The right answer was accepted and reached the node.
	assert.NoError(t, good.rejected)
	assert.True(t, good.accepted)
	assert.True(t, good.completed)
	assert.NoError(t, good.err)
	assert.Equal(t, []string{"yes"}, a.answers(), "the node saw the answer")
	assert.Equal(t, int32(2), a.askRuns.Load(), "ask ran to the interrupt, then with the answer")
	assert.Equal(t, int32(1), a.otherRuns.Load(), "the step's other task did not run again")
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"ask: yes", "other", "after"}, got.Log)

	done := queryProgress(t, env, 0)
	assert.True(t, done.Done)
	assert.Empty(t, done.Interrupts)
	assert.Empty(t, done.Running)
}

func TestInterruptAnsweredBySignal(t *testing.T) {
	want := askInProcess(t)

	var a asker
	g := newGraph(t, "ask", a.graph(t), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	g.Register(env)
	var id string
	var afterBadSignal temporalgraph.Progress
	env.RegisterDelayedCallback(func() {
		if p := queryProgress(t, env, 0); len(p.Interrupts) == 1 {
			id = p.Interrupts[0].ID
		}
		// A signal answering no interrupt is ignored.
		env.SignalWorkflow(temporalgraph.SignalAnswer, temporalgraph.AnswerArg{ID: "no-such-interrupt", Value: json.RawMessage(`"no"`)})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		afterBadSignal = queryProgress(t, env, 0)
		env.SignalWorkflow(temporalgraph.SignalAnswer, temporalgraph.AnswerArg{ID: id, Value: json.RawMessage(`"yes"`)})
	}, 2*time.Minute)

	got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	require.NotEmpty(t, id, "no interrupt was pending")
	require.Len(t, afterBadSignal.Interrupts, 1, "the run still waits after a signal to no interrupt")
	assert.Equal(t, id, afterBadSignal.Interrupts[0].ID)
	assert.Equal(t, []string{"yes"}, a.answers())
	assert.Equal(t, int32(1), a.otherRuns.Load())
	assert.Equal(t, want, got)
}

// An answer of the wrong type is set aside, as in-process: the node
// refuses it, the timeline says so, the interrupt waits again, and the next
// answer of the right type goes through.
func TestInterruptAnswerOfTheWrongType(t *testing.T) {
	var a asker
	g := newGraph(t, "ask", a.graph(t), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	g.Register(env)
	var wrong, right updateResult
	var again temporalgraph.Progress
	env.RegisterDelayedCallback(func() {
		if p := queryProgress(t, env, 0); len(p.Interrupts) == 1 {
			env.UpdateWorkflow(temporalgraph.UpdateAnswer, "u1", wrong.callbacks(),
				temporalgraph.AnswerArg{ID: p.Interrupts[0].ID, Value: json.RawMessage(`42`)})
		}
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		again = queryProgress(t, env, 0)
		if len(again.Interrupts) == 1 {
			env.UpdateWorkflow(temporalgraph.UpdateAnswer, "u2", right.callbacks(),
				temporalgraph.AnswerArg{ID: again.Interrupts[0].ID, Value: json.RawMessage(`"yes"`)})
		}
	}, 2*time.Minute)
	got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	assert.True(t, wrong.accepted, "the run takes any JSON answer; the node decides")
	assert.True(t, right.accepted)
	require.Len(t, again.Interrupts, 1, "the interrupt waits again after the refused answer")
	var refused []temporalgraph.Entry
	for _, e := range again.Entries {
		if e.Kind == temporalgraph.KindAnswerRejected {
			refused = append(refused, e)
		}
	}
	require.Len(t, refused, 1)
	assert.Equal(t, "ask", refused[0].Node)
	assert.Contains(t, refused[0].Err, "is not a string")
	assert.Equal(t, []string{"yes"}, a.answers())
	assert.Equal(t, askInProcess(t), got)
	assert.Equal(t, int32(1), a.otherRuns.Load(), "the other task ran once")
}

// An answer that comes before its interrupt is asked answers nothing: the
// node gets the answer sent once it asks.
func TestEarlyAnswerIgnored(t *testing.T) {
	// Interrupt IDs are stable: learn the one this run will ask under.
	var first asker
	g := newGraph(t, "ask", first.graph(t), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	g.Register(env)
	var id string
	env.RegisterDelayedCallback(func() {
		if p := queryProgress(t, env, 0); len(p.Interrupts) == 1 {
			id = p.Interrupts[0].ID
			env.SignalWorkflow(temporalgraph.SignalAnswer, temporalgraph.AnswerArg{ID: id, Value: json.RawMessage(`"yes"`)})
		}
	}, time.Minute)
	_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	require.NotEmpty(t, id)

	for _, via := range []string{"signal", "update"} {
		t.Run(via, func(t *testing.T) {
			a := asker{gate: make(chan struct{})}
			g := newGraph(t, "ask", a.graph(t), temporalgraph.Options[graphtest.State]{})
			env := newEnv(t)
			g.Register(env)
			var u updateResult
			// While ask runs, before it asks: the early answer, then let
			// ask go on.
			env.RegisterDelayedCallback(func() {
				early := temporalgraph.AnswerArg{ID: id, Value: json.RawMessage(`"early"`)}
				if via == "signal" {
					env.SignalWorkflow(temporalgraph.SignalAnswer, early)
				} else {
					env.UpdateWorkflow(temporalgraph.UpdateAnswer, "early", u.callbacks(), early)
				}
				close(a.gate)
			}, 10*time.Millisecond)
			env.RegisterDelayedCallback(func() {
				if p := queryProgress(t, env, 0); len(p.Interrupts) == 1 {
					env.SignalWorkflow(temporalgraph.SignalAnswer, temporalgraph.AnswerArg{ID: p.Interrupts[0].ID, Value: json.RawMessage(`"late"`)})
				}
			}, time.Minute)
			_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
			require.NoError(t, err)
			assert.Equal(t, []string{"late"}, a.answers())
			if via == "update" {
				assert.Error(t, u.rejected, "the update is refused")
			}
		})
	}
}
