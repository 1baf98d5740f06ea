package agentserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// crashStore is a MemoryStore that stops writing once frozen: what a
// process killed mid-run left in its store.
type crashStore struct {
	*agentserver.MemoryStore
	frozen atomic.Bool
}

func (c *crashStore) PutThread(ctx context.Context, t agentserver.ThreadRecord) error {
	if c.frozen.Load() {
		return nil
	}
	return c.MemoryStore.PutThread(ctx, t)
}

func (c *crashStore) PutRun(ctx context.Context, r agentserver.RunRecord) error {
	if c.frozen.Load() {
		return nil
	}
	return c.MemoryStore.PutRun(ctx, r)
}

// serveStepsOn serves the steps graph over cp and store.
func serveStepsOn(t *testing.T, cp graph.Checkpointer, store agentserver.Store) (*stepsGraph, *agentserver.Server, client) {
	t.Helper()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Store: store, Heartbeat: time.Hour})
	require.NoError(t, err)
	sg, compiled := newStepsGraph(t, cp)
	require.NoError(t, srv.Serve("steps", agentserver.Compiled(compiled)))
	return sg, srv, client{t: t, base: newHTTPServer(t, srv).URL}
}

type runDoc struct {
	RunID    string               `json:"run_id"`
	ThreadID string               `json:"thread_id"`
	Status   string               `json:"status"`
	Metadata agentserver.Metadata `json:"metadata"`
	Kwargs   struct {
		Input map[string]any `json:"input"`
	} `json:"kwargs"`
}

// TestRestartKeepsThreadsAndRuns: a server restarted over the same store
// and checkpointer lists the threads of the one before with their
// metadata, and their runs; a run the first server was running when it
// died is interrupted, and input null continues it where it stopped. A
// deleted thread stays deleted.
func TestRestartKeepsThreadsAndRuns(t *testing.T) {
	cp := graph.NewMemorySaver()
	store := &crashStore{MemoryStore: agentserver.NewMemoryStore()}
	sg, srv, c := serveStepsOn(t, cp, store)

	var th threadDoc
	c.json("POST", "/threads", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200, &th)
	path := "/threads/" + th.ThreadID
	var done stepsState
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}, "metadata": map[string]string{"n": "1"}}, 200, &done)
	var gone threadDoc
	c.json("POST", "/threads", map[string]any{}, 200, &gone)
	c.json("DELETE", "/threads/"+gone.ThreadID, nil, 204, nil)

	// A second run blocks in c; the process "dies": its store keeps what
	// it had written while the run ran.
	sg.block.Store(true)
	var second runDoc
	c.json("POST", path+"/runs", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}, "multitask_strategy": "enqueue"}, 200, &second)
	<-sg.started // the first run's c
	<-sg.started // the second's
	waitFor(t, func() bool {
		var r runDoc
		c.json("GET", path+"/runs/"+second.RunID, nil, 200, &r)
		return r.Status == "running"
	})
	store.frozen.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	store.frozen.Store(false)

	sg2, _, c2 := serveStepsOn(t, cp, store)
	var found []threadDoc
	c2.json("POST", "/threads/search", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200, &found)
	require.Len(t, found, 1, "the thread is listed by its metadata")
	assert.Equal(t, th.ThreadID, found[0].ThreadID)
	assert.JSONEq(t, `"steps"`, string(found[0].Metadata["graph_id"]), "with the graph its first run stamped")
	c2.json("GET", "/threads/"+gone.ThreadID, nil, 404, nil)

	var runs []runDoc
	c2.json("GET", path+"/runs", nil, 200, &runs)
	require.Len(t, runs, 2)
	assert.Equal(t, second.RunID, runs[0].RunID, "newest first")
	assert.Equal(t, "interrupted", runs[0].Status, "the run the server was running when it died")
	assert.Equal(t, "success", runs[1].Status)
	assert.JSONEq(t, `"1"`, string(runs[1].Metadata["n"]))
	assert.NotNil(t, runs[1].Kwargs.Input, "its request")
	var got runDoc
	c2.json("GET", path+"/runs/"+second.RunID, nil, 200, &got)
	assert.Equal(t, "interrupted", got.Status)
	assert.Equal(t, "interrupted", storedStatus(t, store, th.ThreadID, second.RunID), "and kept so")

	// Continue where it stopped: c and d run, a and b do not again.
	var final stepsState
	c2.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil}, 200, &final)
	assert.Len(t, final.Done, 8, "two whole runs: %v", final.Done)
	assert.Equal(t, map[string]int64{"a": 0, "b": 0, "c": 1, "d": 1}, sg2.counts())
	c2.json("GET", path+"/runs", nil, 200, &runs)
	assert.Len(t, runs, 3)
}

func storedStatus(t *testing.T, s agentserver.Store, thread, run string) string {
	runs, err := s.ThreadRuns(t.Context(), thread)
	require.NoError(t, err)
	for _, r := range runs {
		if r.ID == run {
			return r.Status
		}
	}
	return ""
}

// TestResumeRuns: a server shut down while one run ran and another waited
// behind it leaves them to the next: ResumeRuns(interrupted) continues the
// one that ran (input null: only its unfinished task runs) and runs the
// waiting one anew with its request; without interrupted only the waiting
// one runs.
func TestResumeRuns(t *testing.T) {
	for _, interrupted := range []bool{true, false} {
		t.Run(fmt.Sprint(interrupted), func(t *testing.T) {
			cp := graph.NewMemorySaver()
			store := agentserver.NewMemoryStore()
			sg, srv, c := serveStepsOn(t, cp, store)
			path := "/threads/" + newThread(c)
			sg.block.Store(true)
			var first, second runDoc
			c.json("POST", path+"/runs", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{"first"}}}, 200, &first)
			<-sg.started
			c.json("POST", path+"/runs", map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{"second"}}, "multitask_strategy": "enqueue"}, 200, &second)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, srv.Shutdown(ctx))

			sg2, srv2, c2 := serveStepsOn(t, cp, store)
			var runs []runDoc
			c2.json("GET", path+"/runs", nil, 200, &runs)
			require.Len(t, runs, 2)
			assert.Equal(t, "interrupted", runs[0].Status)
			assert.Equal(t, "interrupted", runs[1].Status)
			require.NoError(t, srv2.ResumeRuns(t.Context(), interrupted))
			want := 3 // the two, and the waiting one run anew
			if interrupted {
				want = 4 // and the one that ran, continued
			}
			waitFor(t, func() bool {
				c2.json("GET", path+"/runs", nil, 200, &runs)
				return len(runs) == want && runs[0].Status == "success"
			})
			var st stateDoc
			c2.json("GET", path+"/state", nil, 200, &st)
			var values stepsState
			require.NoError(t, json.Unmarshal(st.Values, &values))
			if interrupted {
				assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 2, "d": 2}, sg2.counts(), "the first run's c and d, then the second run whole")
			} else {
				assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1}, sg2.counts(), "the second run whole only")
			}
			assert.Contains(t, values.Done, "second", "the waiting run's input ran")
		})
	}
}

// gateStore is a MemoryStore whose writes of one thread's records, once
// the gate is armed, wait until it is opened: a store whose I/O is slow.
type gateStore struct {
	*agentserver.MemoryStore
	thread  atomic.Value  // the thread whose writes wait (string)
	entered chan struct{} // closed when a gated write has begun
	open    chan struct{} // closed to let the gated writes through
	once    atomic.Bool
}

func (g *gateStore) wait(threadID string) {
	if g.thread.Load() != threadID {
		return
	}
	if g.once.CompareAndSwap(false, true) {
		close(g.entered)
	}
	<-g.open
}

func (g *gateStore) PutThread(ctx context.Context, t agentserver.ThreadRecord) error {
	g.wait(t.ID)
	return g.MemoryStore.PutThread(ctx, t)
}

func (g *gateStore) PutRun(ctx context.Context, r agentserver.RunRecord) error {
	g.wait(r.ThreadID)
	return g.MemoryStore.PutRun(ctx, r)
}

// TestSubmitDoesNotWaitForOtherThreadsWrites: while a thread's record is
// being written (its store write blocked), a run submitted on another
// thread is taken, runs and ends — the server holds no lock of all its
// records across a store's I/O. Once the blocked write goes through, the
// first thread's run runs too, and the store keeps each record's last
// state.
func TestSubmitDoesNotWaitForOtherThreadsWrites(t *testing.T) {
	cp := graph.NewMemorySaver()
	store := &gateStore{MemoryStore: agentserver.NewMemoryStore(), entered: make(chan struct{}), open: make(chan struct{})}
	store.thread.Store("")
	_, _, c := serveStepsOn(t, cp, store)
	slow, fast := newThread(c), newThread(c)

	store.thread.Store(slow)
	release := sync.OnceFunc(func() { close(store.open) })
	defer release() // a failing test lets the blocked write go, to end
	slowDone := make(chan runDoc, 1)
	go func() {
		defer close(slowDone)
		resp, err := http.Post(c.base+"/threads/"+slow+"/runs", "application/json",
			strings.NewReader(`{"assistant_id": "steps", "input": {"done": []}}`))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var r runDoc
		if resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&r) == nil {
			slowDone <- r
		}
	}()
	<-store.entered // the slow thread's submission is writing its records

	fastDone := make(chan stepsState, 1)
	go func() {
		defer close(fastDone)
		resp, err := http.Post(c.base+"/threads/"+fast+"/runs/wait", "application/json",
			strings.NewReader(`{"assistant_id": "steps", "input": {"done": []}}`))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var st stepsState
		if resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&st) == nil {
			fastDone <- st
		}
	}()
	select {
	case st, ok := <-fastDone:
		require.True(t, ok, "the other thread's run failed")
		assert.NotEmpty(t, st.Done, "the other thread's run ran to its end")
	case <-slowDone:
		t.Fatal("the slow thread's submission returned while its write was blocked")
	case <-time.After(time.Minute): // a deadlock guard, not a measure
		t.Fatal("a run on another thread waited for a blocked write of the first thread's records: a lock of every record held across the store's I/O")
	}
	var runs []runDoc
	c.json("GET", "/threads/"+fast+"/runs", nil, 200, &runs)
	require.Len(t, runs, 1)
	assert.Equal(t, "success", storedStatus(t, store, fast, runs[0].RunID), "its record's last state is kept")

	release()
	r, ok := <-slowDone
	require.True(t, ok, "the slow thread's submission failed")
	var final runDoc
	c.json("GET", "/threads/"+slow+"/runs/"+r.RunID+"/join", nil, 200, nil)
	c.json("GET", "/threads/"+slow+"/runs/"+r.RunID, nil, 200, &final)
	assert.Equal(t, "success", final.Status)
	assert.Equal(t, "success", storedStatus(t, store, slow, r.RunID), "the last of its blocked and later writes is kept")
	threads, err := store.Threads(t.Context())
	require.NoError(t, err)
	for _, th := range threads {
		assert.Equal(t, "idle", th.Status, "thread %s", th.ID)
	}
}
