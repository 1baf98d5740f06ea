package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// The engine's three benchmark shapes with this store: every step is a Put
// and every task outcome a PutWrites. ns/step is the time of a run per
// checkpoint it stores (the input's included), ns/task-write per task
// record.

func BenchmarkChain(b *testing.B) {
	benchShape(b, benchshapes.Chain, benchshapes.ChainState{},
		func(s benchshapes.ChainState) bool { return s.C == 3 }, 4, 3)
}

func BenchmarkFanOut100(b *testing.B) {
	fanOut := func(opts ...graph.Option) (*graph.Compiled[benchshapes.FanState], error) {
		return benchshapes.FanOut(100, opts...)
	}
	benchShape(b, fanOut, benchshapes.FanState{}, func(s benchshapes.FanState) bool { return s.Sum == 9900 }, 4, 102)
}

func BenchmarkLoop100(b *testing.B) {
	loop := func(opts ...graph.Option) (*graph.Compiled[benchshapes.LoopState], error) {
		return benchshapes.Loop(100, opts...)
	}
	benchShape(b, loop, benchshapes.LoopState{}, func(s benchshapes.LoopState) bool { return s.N == 100 }, 101, 100)
}

// benchShape runs the compiled shape once per iteration on a new thread.
func benchShape[S any](b *testing.B, compile func(...graph.Option) (*graph.Compiled[S], error), in S, ok func(S) bool, checkpoints, writes int) {
	s := freshSaver(b)
	c, err := compile(graph.WithCheckpointer(s))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if out, err := c.Invoke(ctx, in, graph.Thread(fmt.Sprintf("bench-%d", i))); err != nil || !ok(out) {
			b.Fatal(out, err)
		}
	}
	perRun := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perRun/float64(checkpoints), "ns/step")
	b.ReportMetric(perRun/float64(writes), "ns/task-write")
}

// BenchmarkPutWrites stores one task record per call, as a finishing task
// does, from one goroutine and from many.
func BenchmarkPutWrites(b *testing.B) {
	update := json.RawMessage(`{"writes":[{"field":"Results","op":"add","value":[42]}]}`)
	setup := func(b *testing.B) (*Saver, func() error) {
		s := freshSaver(b)
		if err := s.Put(context.Background(), checkpoint("bench", "c1", "", 0)); err != nil {
			b.Fatal(err)
		}
		var task atomic.Int64
		b.ReportAllocs()
		return s, func() error {
			return s.PutWrites(context.Background(), "bench", "c1", graph.TaskWrite{Task: int(task.Add(1)), Node: "work", Update: update})
		}
	}
	b.Run("Serial", func(b *testing.B) {
		_, write := setup(b)
		for b.Loop() {
			if err := write(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	})
	b.Run("Parallel", func(b *testing.B) {
		_, write := setup(b)
		b.SetParallelism(8) // tasks of a fan-out finishing together
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
}

// BenchmarkPut stores a thread's checkpoints one after the other.
func BenchmarkPut(b *testing.B) {
	s := freshSaver(b)
	ctx := context.Background()
	b.ReportAllocs()
	parent := ""
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("c%d", i)
		if err := s.Put(ctx, checkpoint("bench", id, parent, i)); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}
