package checkpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// Benchmark measures a store as the engine uses it, each part on a fresh
// store from open:
//
//   - Chain, FanOut100 and Loop100: the engine's benchmark graphs run on
//     the store, a new thread per run, reporting ns/step (a run's time per
//     checkpoint it stores, the input's included) and ns/task-write (per
//     task record);
//   - Loop100/durability=sync|async|exit: Loop100 in each DurabilityMode,
//     ns/step being the cost per node;
//   - SlowLoop20/durability=sync|async|exit: 20 steps of a node that takes
//     1 ms, in each mode: ns/step less 1 ms is what the mode adds to a
//     node that works (async overlaps the writes with the next node);
//   - PutWrites/serial and PutWrites/parallel: one task record per call, as
//     a finished task stores it, from one goroutine and from 16 per CPU (the
//     tasks of a fan-out finishing together), reporting writes/s;
//   - Put: a thread's checkpoints stored one after the other.
//
// Call it from a benchmark of your own store:
//
//	func BenchmarkMyStore(b *testing.B) {
//		checkpointtest.Benchmark(b, func(b *testing.B) graph.Checkpointer { return openMyStore(b) })
//	}
func Benchmark(b *testing.B, open func(b *testing.B) graph.Checkpointer) {
	b.Run("Chain", func(b *testing.B) {
		benchShape(b, open(b), benchshapes.Chain, benchshapes.ChainState{}, func(s benchshapes.ChainState) bool { return s.C == 3 }, 4, 3)
	})
	b.Run("FanOut100", func(b *testing.B) {
		fanOut := func(opts ...graph.Option) (*graph.Compiled[benchshapes.FanState], error) {
			return benchshapes.FanOut(100, opts...)
		}
		benchShape(b, open(b), fanOut, benchshapes.FanState{}, func(s benchshapes.FanState) bool { return s.Sum == 9900 }, 4, 102)
	})
	b.Run("Loop100", func(b *testing.B) {
		loop := func(opts ...graph.Option) (*graph.Compiled[benchshapes.LoopState], error) {
			return benchshapes.Loop(100, opts...)
		}
		benchShape(b, open(b), loop, benchshapes.LoopState{}, func(s benchshapes.LoopState) bool { return s.N == 100 }, 101, 100)
	})
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		// The cost per node of each durability mode: ns/step is per node
		// here, whatever the mode stores.
		b.Run("Loop100/durability="+mode.String(), func(b *testing.B) {
			loop := func(opts ...graph.Option) (*graph.Compiled[benchshapes.LoopState], error) {
				return benchshapes.Loop(100, opts...)
			}
			benchShape(b, open(b), loop, benchshapes.LoopState{}, func(s benchshapes.LoopState) bool { return s.N == 100 }, 100, 100, graph.Durability(mode))
		})
	}
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		// Nodes that take time, as model calls do: async writes a step
		// while the next one works, which Loop100's instant nodes leave
		// nothing to overlap with.
		b.Run("SlowLoop20/durability="+mode.String(), func(b *testing.B) {
			benchShape(b, open(b), slowLoop, State{}, func(s State) bool { return len(s.Log) == slowSteps }, slowSteps, slowSteps, graph.Durability(mode))
		})
	}
	b.Run("PutWrites/serial", func(b *testing.B) {
		write := writer(b, open(b))
		for b.Loop() {
			if err := write(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	})
	b.Run("PutWrites/parallel", func(b *testing.B) {
		write := writer(b, open(b))
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := write(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	})
	b.Run("Put", func(b *testing.B) {
		s := open(b)
		ctx := context.Background()
		b.ReportAllocs()
		parent := ""
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("c%d", i)
			if err := s.Put(ctx, benchCheckpoint(id, parent, i)); err != nil {
				b.Fatal(err)
			}
			parent = id
		}
	})
}

// slowSteps and slowNode: SlowLoop20 is slowSteps steps of a node that
// takes slowNode.
const (
	slowSteps = 20
	slowNode  = time.Millisecond
)

// slowLoop is a loop of slowSteps steps of one node that waits slowNode
// and logs a line.
func slowLoop(opts ...graph.Option) (*graph.Compiled[State], error) {
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("work", func(ctx context.Context, _ State) (graph.Update[State], error) {
		time.Sleep(slowNode) // the node's own work
		return graph.Writes(fLog.Add("step")), nil
	})
	g.AddEdge(graph.Start, "work")
	g.AddConditional("work", func(s State) graph.Route {
		if len(s.Log) >= slowSteps {
			return graph.Goto(graph.End)
		}
		return graph.Goto("work")
	}, "work", graph.End)
	return g.Compile(opts...)
}

// benchShape runs the compiled shape once per iteration on a new thread,
// checking its result.
func benchShape[S any](b *testing.B, s graph.Checkpointer, compile func(...graph.Option) (*graph.Compiled[S], error), in S, ok func(S) bool, checkpoints, writes int, opts ...graph.RunOption) {
	c, err := compile(graph.WithCheckpointer(s))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if out, err := c.Invoke(ctx, in, append([]graph.RunOption{graph.Thread(fmt.Sprintf("bench-%d", i))}, opts...)...); err != nil || !ok(out) {
			b.Fatal(out, err)
		}
	}
	perRun := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perRun/float64(checkpoints), "ns/step")
	b.ReportMetric(perRun/float64(writes), "ns/task-write")
}

// writer stores a checkpoint on s and returns a function that stores the
// record of its next task, safe for concurrent use.
func writer(b *testing.B, s graph.Checkpointer) func() error {
	if err := s.Put(context.Background(), benchCheckpoint("c", "", 0)); err != nil {
		b.Fatal(err)
	}
	var task atomic.Int64
	b.ReportAllocs()
	return func() error {
		n := int(task.Add(1))
		return s.PutWrites(context.Background(), graph.Thread("bench").At("c"), "", graph.TaskWrite{Task: n, Node: "work",
			Update: json.RawMessage(`{"writes":[{"field":"n","op":"set","value":` + strconv.Itoa(n) + `}]}`)})
	}
}

// benchCheckpoint is a small checkpoint of the thread "bench".
func benchCheckpoint(id, parent string, step int) *graph.Checkpoint {
	return &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: "bench", ID: id, Parent: parent, Step: step,
		State: json.RawMessage(`{"n":` + strconv.Itoa(step) + `}`), Created: time.Now(), Source: graph.SourceLoop,
		Next: []graph.PendingTask{{Node: "work"}}}
}
