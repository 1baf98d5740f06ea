package agentserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// within waits for ch, or fails the test after a liveness timeout.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("%s never happened", what)
		panic("unreachable")
	}
}

// submit posts a run in the background and sends its status.
func submit(base, path string, body any) <-chan int {
	out := make(chan int, 1)
	data, _ := json.Marshal(body)
	go func() {
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(data))
		if err != nil {
			out <- 0
			return
		}
		resp.Body.Close()
		out <- resp.StatusCode
	}()
	return out
}

// A submission never waits for the store's writes of another: while the
// record of a run submitted on a thread is stuck in the store, a second
// run submitted on the same thread (enqueued behind it) and one on
// another thread are taken at once. Once the store goes on, both runs'
// records are written, the newest last. (With a lock per thread held
// across the write, the second submission waited for the first's.)
func TestSubmissionsDoNotWaitForRecordWrites(t *testing.T) {
	store := &gateStore{MemoryStore: agentserver.NewMemoryStore(), entered: make(chan struct{}), open: make(chan struct{})}
	store.thread.Store("")
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Store: store, Heartbeat: time.Hour})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(chatGraph(t, cp, nil))))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	a, b := newThread(c), newThread(c)
	release := sync.OnceFunc(func() { close(store.open) })
	t.Cleanup(release)

	store.thread.Store(a)
	first := submit(c.base, "/threads/"+a+"/runs", map[string]any{"assistant_id": "chat", "input": human("first")})
	within(t, store.entered, "the first run's record write")

	second := submit(c.base, "/threads/"+a+"/runs", map[string]any{"assistant_id": "chat", "input": human("second"), "multitask_strategy": "enqueue"})
	assert.Equal(t, 200, within(t, second, "the second submission on the thread whose write is stuck"))
	other := submit(c.base, "/threads/"+b+"/runs", map[string]any{"assistant_id": "chat", "input": human("other")})
	assert.Equal(t, 200, within(t, other, "a submission on another thread"))
	select {
	case <-first:
		t.Fatal("the first submission returned while its record's write was stuck")
	default:
	}

	release()
	assert.Equal(t, 200, within(t, first, "the first submission, its write released"))
	waitFor(t, func() bool {
		runs, err := store.ThreadRuns(context.Background(), a)
		require.NoError(t, err)
		return len(runs) == 2 && runs[0].Status == "success" && runs[1].Status == "success"
	})
}
