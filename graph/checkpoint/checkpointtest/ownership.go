package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// Ownership runs many runs on one thread at once, each through a graph of
// its own over its own handle to the store — as processes sharing a
// database do — and checks that a run owns its thread: a run refused
// because the thread is busy wrote nothing (no input of a loser is ever in
// the thread), runs that resume one thread together never mix their task
// records, and queued runs (BusyEnqueue) all go, one after the other.
// handles returns n handles to one fresh store.
func Ownership(t *testing.T, handles func(t *testing.T, n int) []graph.Checkpointer) {
	t.Run("LosersWriteNothing", func(t *testing.T) { ownLosers(t, handles(t, 8)) })
	t.Run("ResumersDoNotMix", func(t *testing.T) { ownResumers(t, handles(t, 4)) })
	t.Run("QueuedRunsAllGo", func(t *testing.T) { ownQueue(t, handles(t, 4)) })
}

// tagGraph is start → work → End; work adds "<input>@<tag>" for each input
// item, so that the final state says which graph ran it.
func tagGraph(t *testing.T, store graph.Checkpointer, tag string, fail func() bool) *graph.Compiled[State] {
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("start", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add("start@" + tag)), nil
	})
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[State], error) {
		if fail() {
			return graph.Update[State]{}, fmt.Errorf("work on %s failed", item)
		}
		return graph.Writes(fItems.Add(item + "@" + tag)), nil
	})
	g.AddEdge(graph.Start, "start")
	graph.AddFanOut(g, "start", "work", func(s State) []string {
		var pending []string
		for _, it := range s.Items {
			if !strings.Contains(it, "@") {
				pending = append(pending, it)
			}
		}
		return pending
	})
	g.AddEdge("work", graph.End)
	c, err := g.Compile(graph.WithCheckpointer(store))
	require.NoError(t, err)
	return c
}

func never() bool { return false }

func ownLosers(t *testing.T, stores []graph.Checkpointer) {
	const perStore = 3
	type outcome struct {
		run string
		err error
	}
	var wg sync.WaitGroup
	out := make(chan outcome, len(stores)*perStore)
	start := make(chan struct{})
	for i, s := range stores {
		for k := range perStore {
			run := fmt.Sprintf("r%d-%d", i, k)
			c := tagGraph(t, s, run, never)
			wg.Go(func() {
				<-start
				_, err := c.Invoke(context.Background(), State{Items: []string{run}}, graph.Thread("contended"), graph.RunID(run))
				out <- outcome{run, err}
			})
		}
	}
	close(start)
	wg.Wait()
	close(out)
	won := map[string]bool{}
	lost := map[string]error{}
	busy := 0
	for o := range out {
		if o.err != nil {
			lost[o.run] = o.err
		}
		switch {
		case o.err == nil:
			won[o.run] = true
		case errors.Is(o.err, graph.ErrThreadBusy):
			busy++
		default:
			t.Errorf("run %s: %v (want success or ErrThreadBusy)", o.run, o.err)
		}
	}
	require.NotEmpty(t, won)
	t.Logf("%d runs finished, %d were refused as busy", len(won), busy)
	g := tagGraph(t, stores[0], "reader", never)
	snap, err := g.State(ctx(t), graph.Thread("contended"))
	require.NoError(t, err)
	var inputs []string
	for _, it := range snap.State.Items {
		if !strings.Contains(it, "@") {
			inputs = append(inputs, it)
			assert.True(t, won[it], "input %s is in the thread, but its run did not finish: a loser's input (the run ended with: %v)", it, lost[it])
			assert.Contains(t, snap.State.Items, it+"@"+it, "run %s's input was worked on by run %s itself", it, it)
		}
	}
	assert.Len(t, inputs, len(won), "every finished run's input, once")
	hist, err := g.History(ctx(t), graph.Thread("contended"), 0)
	require.NoError(t, err)
	for _, h := range hist {
		assert.True(t, won[h.Run], "checkpoint %s was written by run %s, which did not finish (it ended with: %v)", h.CheckpointID, h.Run, lost[h.Run])
	}
}

func ownResumers(t *testing.T, stores []graph.Checkpointer) {
	var mu sync.Mutex
	failing := true
	fail := func() bool { mu.Lock(); defer mu.Unlock(); return failing }
	first := tagGraph(t, stores[0], "first", fail)
	items := []string{"a", "b", "c", "d", "e", "f"}
	_, err := first.Invoke(ctx(t), State{Items: items}, graph.Thread("resumed"))
	require.Error(t, err, "every task fails the first time")
	mu.Lock()
	failing = false
	mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	start := make(chan struct{})
	for i, s := range stores {
		c := tagGraph(t, s, fmt.Sprintf("resumer%d", i), never)
		wg.Go(func() {
			<-start
			_, errs[i] = c.Resume(context.Background(), graph.Thread("resumed"))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, graph.ErrThreadBusy) {
			t.Errorf("resumer %d: %v (want success or ErrThreadBusy)", i, err)
		}
	}
	snap, err := first.State(ctx(t), graph.Thread("resumed"))
	require.NoError(t, err)
	require.True(t, snap.Done())
	tags := map[string]bool{}
	for _, it := range snap.State.Items {
		if _, tag, ok := strings.Cut(it, "@"); ok {
			tags[tag] = true
		}
	}
	assert.Len(t, tags, 1, "one resumer did the step's work, no other overwrote its records: %v", snap.State.Items)
	hist, err := first.History(ctx(t), graph.Thread("resumed"), 0)
	require.NoError(t, err)
	for _, h := range hist {
		for _, task := range h.Tasks {
			if !task.Done {
				continue
			}
			written, _ := fItems.Written(task.Update)
			for _, it := range written {
				_, tag, _ := strings.Cut(it, "@")
				assert.True(t, tags[tag], "record of task %s written by %s", task.ID, tag)
			}
		}
	}
}

func ownQueue(t *testing.T, stores []graph.Checkpointer) {
	var wg sync.WaitGroup
	var runs []string
	start := make(chan struct{})
	for i, s := range stores {
		run := fmt.Sprintf("q%d", i)
		runs = append(runs, run)
		c := tagGraph(t, s, run, never)
		wg.Go(func() {
			<-start
			_, err := c.Invoke(context.Background(), State{Items: []string{run}}, graph.Thread("queue"), graph.RunID(run), graph.OnBusy(graph.BusyEnqueue))
			assert.NoError(t, err, "run %s", run)
		})
	}
	close(start)
	wg.Wait()
	g := tagGraph(t, stores[0], "reader", never)
	snap, err := g.State(ctx(t), graph.Thread("queue"))
	require.NoError(t, err)
	var got []string
	for _, it := range snap.State.Items {
		if !strings.Contains(it, "@") {
			got = append(got, it)
		}
	}
	slices.Sort(got)
	assert.Equal(t, runs, got, "every queued run went, once")
}
