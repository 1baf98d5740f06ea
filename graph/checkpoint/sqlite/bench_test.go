package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// shape is one of the engine's benchmark graphs, with what a run of it
// stores.
type shape struct {
	name        string
	checkpoints int // per run, the input's included
	taskWrites  int // per run
	// runner compiles the graph on store and returns a function that runs
	// it on a thread.
	runner func(b *testing.B, store graph.Checkpointer) func(ctx context.Context, thread string) error
}

func shapes() []shape {
	return []shape{
		{"Chain", 4, 3, func(b *testing.B, store graph.Checkpointer) func(context.Context, string) error {
			g, err := benchshapes.Chain(graph.WithCheckpointer(store))
			require.NoError(b, err)
			return func(ctx context.Context, thread string) error {
				_, err := g.Invoke(ctx, benchshapes.ChainState{}, graph.Thread(thread))
				return err
			}
		}},
		{"FanOut100", 4, 102, func(b *testing.B, store graph.Checkpointer) func(context.Context, string) error {
			g, err := benchshapes.FanOut(100, graph.WithCheckpointer(store))
			require.NoError(b, err)
			return func(ctx context.Context, thread string) error {
				_, err := g.Invoke(ctx, benchshapes.FanState{}, graph.Thread(thread))
				return err
			}
		}},
		{"Loop100", 101, 100, func(b *testing.B, store graph.Checkpointer) func(context.Context, string) error {
			g, err := benchshapes.Loop(100, graph.WithCheckpointer(store))
			require.NoError(b, err)
			return func(ctx context.Context, thread string) error {
				_, err := g.Invoke(ctx, benchshapes.LoopState{}, graph.Thread(thread))
				return err
			}
		}},
	}
}

// BenchmarkShapes runs the engine's benchmark graphs on the store, and on
// graph.MemorySaver for reference, a new thread per run.
func BenchmarkShapes(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) graph.Checkpointer
	}{
		{"sqlite", func(b *testing.B) graph.Checkpointer { return openTemp(b) }},
		{"memory", func(*testing.B) graph.Checkpointer { return graph.NewMemorySaver() }},
	}
	for _, sh := range shapes() {
		for _, st := range stores {
			b.Run(sh.name+"/"+st.name, func(b *testing.B) {
				run := sh.runner(b, st.open(b))
				ctx := context.Background()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := run(ctx, fmt.Sprintf("bench-%d", i)); err != nil {
						b.Fatal(err)
					}
				}
				perRun := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(perRun/float64(sh.checkpoints), "ns/step")
				b.ReportMetric(perRun/float64(sh.taskWrites), "ns/task-write")
			})
		}
	}
}

// BenchmarkPutWrites stores one task record per call, as a finished task
// does, from one goroutine and from many (16 per CPU, as when the tasks of
// a fan-out finish together), at each synchronous level.
func BenchmarkPutWrites(b *testing.B) {
	for _, level := range []Synchronous{SyncNormal, SyncFull} {
		setup := func(b *testing.B) *Saver {
			s := openTemp(b, WithSynchronous(level))
			require.NoError(b, s.Put(context.Background(), checkpoint("t", "c", "", 0)))
			b.ReportAllocs()
			b.ResetTimer()
			return s
		}
		report := func(b *testing.B) {
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		}
		b.Run(string(level)+"/serial", func(b *testing.B) {
			s := setup(b)
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				if err := s.PutWrites(ctx, "t", "c", record(i)); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
		b.Run(string(level)+"/parallel", func(b *testing.B) {
			s := setup(b)
			var next atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if err := s.PutWrites(ctx, "t", "c", record(int(next.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			report(b)
		})
	}
}

// BenchmarkPut stores a thread's checkpoints one after the other, as the
// steps of a run do.
func BenchmarkPut(b *testing.B) {
	s := openTemp(b)
	ctx := context.Background()
	parent := ""
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("c%d", i)
		if err := s.Put(ctx, checkpoint("t", id, parent, i)); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}
