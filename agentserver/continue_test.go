package agentserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// stepsState is the continue test's state: what each node wrote.
type stepsState struct {
	Done []string `json:"done"`
}

var fDone = graph.Append(func(s *stepsState) *[]string { return &s.Done })

// stepsGraph runs a, then b and c side by side, then d. c blocks until its
// context ends while block is set, fails while fail is set; started
// receives each start of c.
type stepsGraph struct {
	calls   map[string]*atomic.Int64
	block   atomic.Bool
	fail    atomic.Bool
	started chan struct{}
}

func newStepsGraph(t *testing.T, cp graph.Checkpointer) (*stepsGraph, *graph.Compiled[stepsState]) {
	sg := &stepsGraph{calls: map[string]*atomic.Int64{}, started: make(chan struct{}, 4)}
	g := graph.New[stepsState](fDone)
	for _, name := range []string{"a", "b", "c", "d"} {
		n := new(atomic.Int64)
		sg.calls[name] = n
		g.AddNode(name, func(ctx context.Context, s stepsState) (graph.Update[stepsState], error) {
			n.Add(1)
			if name == "c" {
				sg.started <- struct{}{}
				if sg.block.Load() {
					<-ctx.Done()
					return graph.Update[stepsState]{}, ctx.Err()
				}
				if sg.fail.Load() {
					return graph.Update[stepsState]{}, errors.New("c failed")
				}
			}
			return graph.Writes(fDone.Add(name)), nil
		})
	}
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "d")
	g.AddEdge("c", "d")
	g.AddEdge("d", graph.End)
	c, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return sg, c
}

func (sg *stepsGraph) counts() map[string]int64 {
	out := map[string]int64{}
	for k, v := range sg.calls {
		out[k] = v.Load()
	}
	return out
}

// serveSteps serves the steps graph (assistant "steps") on a memory saver
// and returns it, a client, and the path of a new thread.
func serveSteps(t *testing.T) (*stepsGraph, client, string) {
	t.Helper()
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Heartbeat: time.Hour})
	require.NoError(t, err)
	sg, compiled := newStepsGraph(t, cp)
	require.NoError(t, srv.Serve("steps", agentserver.Compiled(compiled)))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	return sg, c, "/threads/" + newThread(c)
}

// TestContinueCancelledRun: a run cancelled mid-step (cancel
// action=interrupt) leaves its thread with pending tasks; a run with input
// null and no command continues it: only the task that had not finished
// (c) runs again, then the rest of the graph (d); a and b are not run
// again.
func TestContinueCancelledRun(t *testing.T) {
	sg, c, path := serveSteps(t)

	sg.block.Store(true)
	var run struct {
		RunID string `json:"run_id"`
	}
	c.json("POST", path+"/runs", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}}, 200, &run)
	<-sg.started
	// b, c's sibling, has finished: its write is recorded in the pending step.
	waitFor(t, func() bool {
		var st stateDoc
		c.json("GET", path+"/state", nil, 200, &st)
		for _, task := range st.Tasks {
			if task.Name == "b" && len(task.Result) > 0 && string(task.Result) != "null" {
				return true
			}
		}
		return false
	})
	c.json("POST", path+"/runs/"+run.RunID+"/cancel?wait=1&action=interrupt", nil, 204, nil)
	var got struct {
		Status string `json:"status"`
	}
	c.json("GET", path+"/runs/"+run.RunID, nil, 200, &got)
	require.Equal(t, "interrupted", got.Status)
	var st stateDoc
	c.json("GET", path+"/state", nil, 200, &st)
	assert.Equal(t, []string{"c"}, st.Next, "the cancelled step is pending: c, b having finished")
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 0}, sg.counts())

	// Continue: input null, no command.
	sg.block.Store(false)
	_, evs := stream(t, c, path+"/runs/stream", map[string]any{"assistant_id": "steps", "input": nil, "stream_mode": []string{"values", "updates"}})
	require.Empty(t, ofType(evs, "error"), "%v", evs)
	values := ofType(evs, "values")
	require.NotEmpty(t, values)
	var final stepsState
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &final))
	assert.ElementsMatch(t, []string{"a", "b", "c", "d"}, final.Done)
	assert.Len(t, final.Done, 4, "each node wrote once: %v", final.Done)
	var ran []string
	for _, u := range ofType(evs, "updates") {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(u.Data, &m))
		for k := range m {
			ran = append(ran, k)
		}
	}
	assert.Equal(t, []string{"c", "d"}, ran, "the continuing run ran only the unfinished task and what follows")
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 2, "d": 1}, sg.counts(), "node calls: c again (its first call was cancelled), d once; a and b not again")
	c.json("GET", path+"/state", nil, 200, &st)
	assert.Empty(t, st.Next)
	var th threadDoc
	c.json("GET", path, nil, 200, &th)
	assert.Equal(t, "idle", th.Status)

	// Nothing pending: input null runs the graph over, as before.
	var again stepsState
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps"}, 200, &again)
	assert.Len(t, again.Done, 8)
	assert.Equal(t, map[string]int64{"a": 2, "b": 2, "c": 3, "d": 2}, sg.counts())
}

// TestContinueRefusedWhileAnInterruptWaits: input null on a thread whose
// pending task waits for an answer is refused with 422, naming
// command.resume; a breakpoint (interrupt_before) is no answer awaited:
// input null continues past it.
func TestContinueRefusedWhileAnInterruptWaits(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	path := "/threads/" + tid
	var out chatState
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "hi"}}, "review": true}}, 200, &out)
	var body struct {
		Detail string `json:"detail"`
	}
	c.json("POST", path+"/runs/stream", map[string]any{"assistant_id": "chat", "input": nil}, 422, &body)
	assert.Contains(t, body.Detail, "command.resume")
	assert.Contains(t, body.Detail, "(review)")
	c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat"}, 422, &body)
	assert.Contains(t, body.Detail, "command.resume")
	// The thread still waits; the answer goes on.
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "command": map[string]any{"resume": "ok"}}, 200, &out)
	assert.Equal(t, "ok", out.Approved)
	assert.Equal(t, 1, out.Drafts)

	// A breakpoint: input null continues past it, drafting once.
	tid = newThread(c)
	path = "/threads/" + tid
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "input": human("bp"), "interrupt_before": []string{"draft"}}, 200, &out)
	var st stateDoc
	c.json("GET", path+"/state", nil, 200, &st)
	require.Equal(t, []string{"draft"}, st.Next)
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "input": nil}, 200, &out)
	assert.Equal(t, 1, out.Drafts)
	require.Len(t, out.Messages, 2)
	assert.Equal(t, "You said: bp", out.Messages[1].Content)
}

// waitFor polls cond until it holds (a state reached in the background).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 12000 { // up to a minute on a loaded machine; as soon as it holds otherwise
		if cond() {
			return
		}
		sleepABit()
	}
	t.Fatal("the condition never held")
}

// TestContinueFailedRun: a run that failed in a task continues with input
// null: the failed task runs again, its finished sibling does not.
func TestContinueFailedRun(t *testing.T) {
	sg, c, path := serveSteps(t)

	sg.fail.Store(true)
	_, evs := stream(t, c, path+"/runs/stream", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}})
	require.NotEmpty(t, ofType(evs, "error"))
	var th threadDoc
	c.json("GET", path, nil, 200, &th)
	require.Equal(t, "error", th.Status)
	var st stateDoc
	c.json("GET", path+"/state", nil, 200, &st)
	require.Equal(t, []string{"c"}, st.Next)

	sg.fail.Store(false)
	var final stepsState
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil}, 200, &final)
	assert.ElementsMatch(t, []string{"a", "b", "c", "d"}, final.Done)
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 2, "d": 1}, sg.counts())
	c.json("GET", path, nil, 200, &th)
	assert.Equal(t, "idle", th.Status)
}

// TestContinueFromAPastCheckpoint: a run with input null on a past
// checkpoint (Agent Chat UI's regenerate sends the parent checkpoint)
// runs that checkpoint's pending tasks and what follows them, on a new
// branch: b and c again, then d; a, finished before it, is not run again.
func TestContinueFromAPastCheckpoint(t *testing.T) {
	sg, c, path := serveSteps(t)
	var done struct {
		Done []string `json:"done"`
	}
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}}, 200, &done)
	require.Equal(t, []string{"a", "b", "c", "d"}, done.Done)
	var hist []stateDoc
	c.json("POST", path+"/history", map[string]any{"limit": 50}, 200, &hist)
	var afterA string
	for _, st := range hist {
		if assert.ObjectsAreEqual([]string{"b", "c"}, st.Next) {
			afterA = st.Checkpoint.CheckpointID
		}
	}
	require.NotEmpty(t, afterA, "no checkpoint waits for b and c: %+v", hist)

	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil, "checkpoint_id": afterA}, 200, &done)
	assert.Equal(t, []string{"a", "b", "c", "d"}, done.Done, "the branch's state")
	assert.Equal(t, map[string]int64{"a": 1, "b": 2, "c": 2, "d": 2}, sg.counts())
}

// TestDurability: a run's durability is the engine's (graph.Durability):
// exit stores the run's last checkpoint only, sync every step's; both end
// in the same state. An unknown mode is refused.
func TestDurability(t *testing.T) {
	_, c, syncPath := serveSteps(t)
	exitPath := "/threads/" + newThread(c)
	history := map[string]int{}
	for mode, path := range map[string]string{"sync": syncPath, "exit": exitPath} {
		var done stepsState
		c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}, "durability": mode}, 200, &done)
		assert.Equal(t, []string{"a", "b", "c", "d"}, done.Done, mode)
		var hist []stateDoc
		c.json("POST", path+"/history", map[string]any{"limit": 50}, 200, &hist)
		history[mode] = len(hist)
	}
	assert.Less(t, history["exit"], history["sync"], "checkpoints stored: %v", history)
	var refused struct {
		Detail string `json:"detail"`
	}
	c.json("POST", exitPath+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}, "durability": "never"}, 422, &refused)
	assert.Contains(t, refused.Detail, "use sync, async or exit")
}
