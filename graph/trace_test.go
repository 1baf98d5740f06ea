package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// recTracer records what the engine reports as a tree: each observation
// gets an id carried in the context, so a record's parent is whatever
// observation's context the engine started it under.
type recTracer struct {
	mu   sync.Mutex
	recs []rec
}

type rec struct {
	name, parent string
	err          error
	ended        bool
}

type recKey struct{}

func (t *recTracer) start(ctx context.Context, name string) (context.Context, func(error)) {
	parent, _ := ctx.Value(recKey{}).(string)
	t.mu.Lock()
	i := len(t.recs)
	t.recs = append(t.recs, rec{name: name, parent: parent})
	t.mu.Unlock()
	return context.WithValue(ctx, recKey{}, name), func(err error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.recs[i].ended {
			panic("ended twice: " + name)
		}
		t.recs[i].err, t.recs[i].ended = err, true
	}
}

func (t *recTracer) StartRun(ctx context.Context, r graph.RunInfo) (context.Context, func(error)) {
	return t.start(ctx, fmt.Sprintf("run sub=%v resume=%v", r.Subgraph, r.Resume))
}

func (t *recTracer) StartStep(ctx context.Context, s graph.StepInfo) (context.Context, func(error)) {
	return t.start(ctx, fmt.Sprintf("step %d tasks=%d", s.Step, s.Tasks))
}

func (t *recTracer) StartTask(ctx context.Context, k graph.TaskInfo) (context.Context, func(error)) {
	name := fmt.Sprintf("task %s step=%d idx=%d send=%v attempt=%d", k.Node, k.Step, k.Index, k.Send, k.Attempt)
	if k.RetryReason != nil {
		name += " retry=" + k.RetryReason.Error()
	}
	return t.start(ctx, name)
}

// tree renders the records as "parent > name" lines, sorted, so that the
// order of parallel tasks does not matter.
func (t *recTracer) tree() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, r := range t.recs {
		if !r.ended {
			out = append(out, "NOT ENDED "+r.name)
		}
		out = append(out, r.parent+" > "+r.name)
	}
	slices.Sort(out)
	return out
}

func TestTracerSeesRunStepsTasksAndNesting(t *testing.T) {
	inner := newT()
	inner.AddNode("x", logNode("x"))
	inner.AddSequence(graph.Start, "x", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	g := newT()
	fails := 0
	g.AddNode("flaky", func(context.Context, tState) (graph.Update[tState], error) {
		if fails++; fails == 1 {
			return graph.Update[tState]{}, errors.New("boom")
		}
		return graph.Writes(tLog.Add("flaky")), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	graph.AddTask(g, "work", func(_ context.Context, s string) (graph.Update[tState], error) {
		return graph.Writes(tItems.Add(s)), nil
	})
	g.AddSubgraph("sub", sub)
	g.AddEdge(graph.Start, "flaky")
	graph.AddFanOut(g, "flaky", "work", func(tState) []string { return []string{"a", "b"} })
	g.AddEdge("work", "sub")
	g.AddEdge("sub", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)

	tr := &recTracer{}
	ctx := graph.ContextWithTracer(context.Background(), tr)
	out, err := c.Invoke(ctx, tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"flaky", "x"}, out.Log)

	assert.Equal(t, []string{
		" > run sub=false resume=false",
		"run sub=false resume=false > step 1 tasks=1",
		"run sub=false resume=false > step 2 tasks=2",
		"run sub=false resume=false > step 3 tasks=1",
		"run sub=true resume=false > step 1 tasks=1",
		"step 1 tasks=1 > task flaky step=1 idx=0 send=false attempt=1",
		"step 1 tasks=1 > task flaky step=1 idx=0 send=false attempt=2 retry=boom",
		"step 1 tasks=1 > task x step=1 idx=0 send=false attempt=1",
		"step 2 tasks=2 > task work step=2 idx=0 send=true attempt=1",
		"step 2 tasks=2 > task work step=2 idx=1 send=true attempt=1",
		"step 3 tasks=1 > task sub step=3 idx=0 send=false attempt=1",
		"task sub step=3 idx=0 send=false attempt=1 > run sub=true resume=false",
	}, tr.tree())
	tr.mu.Lock()
	assert.EqualError(t, tr.recs[2].err, "boom", "the failed attempt ends with its error")
	tr.mu.Unlock()
}

func TestTracerSeesStreamAndFailure(t *testing.T) {
	g := newT()
	g.AddNode("bad", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Update[tState]{}, errors.New("no luck")
	})
	g.AddSequence(graph.Start, "bad", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)
	tr := &recTracer{}
	var last error
	for _, err := range c.Stream(graph.ContextWithTracer(context.Background(), tr), tState{}) {
		last = err
	}
	require.Error(t, last)
	tree := tr.tree()
	assert.Equal(t, []string{
		" > run sub=false resume=false",
		"run sub=false resume=false > step 1 tasks=1",
		"step 1 tasks=1 > task bad step=1 idx=0 send=false attempt=1",
	}, tree)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, r := range tr.recs {
		assert.ErrorContains(t, r.err, "no luck", r.name)
	}
}

func TestContextWithNilTracerTurnsTracingOff(t *testing.T) {
	tr := &recTracer{}
	ctx := graph.ContextWithTracer(graph.ContextWithTracer(context.Background(), tr), nil)
	assert.Nil(t, graph.TracerFrom(ctx))
	c, err := benchshapes.Chain()
	require.NoError(t, err)
	_, err = c.Invoke(ctx, benchshapes.ChainState{})
	require.NoError(t, err)
	assert.Empty(t, tr.tree())
	assert.Nil(t, graph.TracerFrom(context.Background()))
}

// nopTracer is the cheapest tracer: it shows what the hook itself costs per
// node when a tracer is attached.
type nopTracer struct{}

func nopEnd(error) {}

func (nopTracer) StartRun(ctx context.Context, _ graph.RunInfo) (context.Context, func(error)) {
	return ctx, nopEnd
}

func (nopTracer) StartStep(ctx context.Context, _ graph.StepInfo) (context.Context, func(error)) {
	return ctx, nopEnd
}

func (nopTracer) StartTask(ctx context.Context, _ graph.TaskInfo) (context.Context, func(error)) {
	return ctx, nopEnd
}

func BenchmarkChain3NopTracer(b *testing.B) {
	c, err := benchshapes.Chain()
	if err != nil {
		b.Fatal(err)
	}
	ctx := graph.ContextWithTracer(context.Background(), nopTracer{})
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.ChainState{}); err != nil || out.C != 3 {
			b.Fatal(out, err)
		}
	}
	perNode(b, 3)
}
