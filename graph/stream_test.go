package graph_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// blockingFanOut: "split" sends width tasks that emit a token, then block
// until cancelled. It counts tasks that started and that stopped.
type counts struct{ started, stopped atomic.Int32 }

func blockingFanOut(t *testing.T, width int, n *counts) *graph.Compiled[tState] {
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "wait", func(ctx context.Context, i int) (graph.Update[tState], error) {
		n.started.Add(1)
		defer n.stopped.Add(1)
		graph.Emit(ctx, i)
		<-ctx.Done()
		return graph.Update[tState]{}, ctx.Err()
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "wait", func(tState) []int { return make([]int, width) })
	g.AddEdge("wait", graph.End)
	return compile(t, g)
}

func TestBreakingOutOfAStreamCancelsTheRun(t *testing.T) {
	var n counts
	c := blockingFanOut(t, 5, &n)
	// The tasks wait for their context alone: Stream returns only once
	// breaking out has cancelled them.
	for ev, err := range c.Stream(context.Background(), tState{}) {
		require.NoError(t, err)
		if ev.Kind == graph.EventCustom {
			break
		}
	}
	assert.Positive(t, n.started.Load())
	assert.Equal(t, n.started.Load(), n.stopped.Load(), "every task had stopped when Stream returned")
}

func TestCancellingTheStreamContextEndsWithTheError(t *testing.T) {
	var n counts
	c := blockingFanOut(t, 3, &n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range c.Stream(ctx, tState{}) {
		if ev.Kind == graph.EventCustom {
			cancel()
		}
		last = err
	}
	require.ErrorIs(t, last, context.Canceled)
	assert.Equal(t, n.started.Load(), n.stopped.Load())
}

func TestStreamReportsTaskFailures(t *testing.T) {
	g := newT()
	g.AddNode("bad", func(context.Context, tState) (graph.Update[tState], error) { return graph.Update[tState]{}, errBoom })
	g.AddSequence(graph.Start, "bad", graph.End)
	var taskErr, runErr error
	for ev, err := range compile(t, g).Stream(context.Background(), tState{}) {
		if ev.Kind == graph.EventTaskEnd {
			taskErr = ev.Err
		}
		if err != nil {
			runErr = err
		}
	}
	assert.ErrorIs(t, taskErr, errBoom)
	assert.ErrorIs(t, runErr, errBoom)
}

func TestEmitOutsideAStreamIsANoOp(t *testing.T) {
	graph.Emit(context.Background(), "nobody listens")
	assert.False(t, graph.Streaming(context.Background()))
	g := newT()
	var streaming []bool
	g.AddNode("a", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		streaming = append(streaming, graph.Streaming(ctx))
		graph.Emit(ctx, "dropped")
		return graph.Writes(tLog.Add("a")), nil
	})
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g)
	out, err := c.Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, out.Log)
	for _, err := range c.Stream(context.Background(), tState{}) {
		require.NoError(t, err)
	}
	assert.Equal(t, []bool{false, true}, streaming)
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	var n counts
	c := blockingFanOut(t, 10, &n)
	fan, err := benchshapes.FanOut(50)
	require.NoError(t, err)
	for range 50 {
		for ev := range c.Stream(context.Background(), tState{}) {
			if ev.Kind == graph.EventCustom {
				break
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, _ = c.Invoke(ctx, tState{})
		cancel()
		_, err := fan.Invoke(context.Background(), benchshapes.FanState{})
		require.NoError(t, err)
		for _, err := range fan.Stream(context.Background(), benchshapes.FanState{}) {
			require.NoError(t, err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before)
}

// A task's context stays valid after the task: something the node handed
// it to — an HTTP dial finishing in the background, a goroutine — may still
// read it while the run goes on to reuse the task's slot for later steps.
func TestATaskContextOutlivesItsTask(t *testing.T) {
	type key struct{}
	var wg sync.WaitGroup
	read := make(chan any, 64)
	g := newT()
	g.AddNode("loop", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				read <- ctx.Value(key{})
				runtime.Gosched()
			}
		}()
		graph.Emit(ctx, s.N)
		return graph.Writes(tN.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "loop")
	g.AddConditional("loop", func(s tState) graph.Route {
		if s.N < 20 {
			return graph.Goto("loop")
		}
		return graph.Goto(graph.End)
	}, "loop", graph.End)
	c := compile(t, g)
	ctx := context.WithValue(context.Background(), key{}, "run")
	go func() {
		for v := range read {
			assert.Equal(t, "run", v)
		}
	}()
	for _, err := range c.Stream(ctx, tState{}) {
		require.NoError(t, err)
	}
	wg.Wait()
	close(read)
}
