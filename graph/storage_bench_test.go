package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/graph"
)

// docState is a state with one large field that no node writes.
type docState struct {
	Doc string
	Log []string
	N   int
}

var (
	dDoc = graph.Value(func(s *docState) *string { return &s.Doc })
	dLog = graph.Append(func(s *docState) *[]string { return &s.Log })
	dN   = graph.Value(func(s *docState) *int { return &s.N })
)

// storedBytes runs build's graph on a MemorySaver and reports the bytes its
// thread takes, per thread and per checkpoint.
func storedBytes(b *testing.B, doc int, runs int, build func(*graph.Graph[docState])) {
	g := graph.New[docState](dDoc, dLog, dN)
	build(g)
	ctx := context.Background()
	big := strings.Repeat("x", doc)
	var bytes, cps int64
	for i := 0; b.Loop(); i++ {
		store := graph.NewMemorySaver()
		c, err := g.Compile(graph.WithCheckpointer(store))
		if err != nil {
			b.Fatal(err)
		}
		thread := graph.Thread(fmt.Sprint("t", i))
		for r := range runs {
			in := docState{}
			if r == 0 {
				in.Doc = big
			}
			if _, err := c.Invoke(ctx, in, thread); err != nil {
				b.Fatal(err)
			}
		}
		n, err := store.StoredBytes(ctx, thread.Thread)
		if err != nil {
			b.Fatal(err)
		}
		hist, err := c.History(ctx, thread, 0)
		if err != nil {
			b.Fatal(err)
		}
		bytes, cps = n, int64(len(hist))
	}
	b.ReportMetric(float64(bytes), "bytes/thread")
	b.ReportMetric(float64(bytes)/float64(cps), "bytes/checkpoint")
}

// BenchmarkStorage10MB is issue 26's case: a 3-node thread with a 10 MB
// state, run twice.
func BenchmarkStorage10MB(b *testing.B) {
	storedBytes(b, 10<<20, 2, func(g *graph.Graph[docState]) {
		for _, name := range []string{"a", "b", "c"} {
			g.AddNode(name, func(context.Context, docState) (graph.Update[docState], error) {
				return graph.Writes(dLog.Add(name)), nil
			})
		}
		g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	})
}

// BenchmarkStorageLongThread is a 100-step loop over a 100 KB document
// that only a counter changes.
func BenchmarkStorageLongThread(b *testing.B) {
	storedBytes(b, 100<<10, 1, func(g *graph.Graph[docState]) {
		g.AddNode("step", func(_ context.Context, s docState) (graph.Update[docState], error) {
			return graph.Writes(dN.Set(s.N + 1)), nil
		})
		g.AddEdge(graph.Start, "step")
		g.AddConditional("step", func(s docState) graph.Route {
			if s.N >= 100 {
				return graph.Goto(graph.End)
			}
			return graph.Goto("step")
		}, "step", graph.End)
	})
}
