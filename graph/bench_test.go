package graph_test

import (
	"context"
	"testing"

	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

// The three shapes of the engine's performance targets (≤ 1 µs and ≤ 10
// allocations per node execution). bench/peers runs the same shapes next to
// cloudwego/eino.

func BenchmarkChain3(b *testing.B) {
	c, err := benchshapes.Chain()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.ChainState{}); err != nil || out.C != 3 {
			b.Fatal(out, err)
		}
	}
	perNode(b, 3)
}

func BenchmarkFanOut100(b *testing.B) {
	c, err := benchshapes.FanOut(100)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.FanState{}); err != nil || out.Sum != 9900 {
			b.Fatal(out.Sum, err)
		}
	}
	perNode(b, 102)
}

func BenchmarkLoop100(b *testing.B) {
	c, err := benchshapes.Loop(100)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.LoopState{}); err != nil || out.N != 100 {
			b.Fatal(out, err)
		}
	}
	perNode(b, 100)
}

func perNode(b *testing.B, nodes int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
}

// BenchmarkFanOut10000 is a wide Send fan-out under the default settings:
// 10,000 trivial tasks in one step. It shows what the default bound on the
// tasks running at once (DefaultMaxConcurrency) saves over one goroutine
// per task.
func BenchmarkFanOut10000(b *testing.B) {
	const width = 10000
	c, err := benchshapes.FanOut(width)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.FanState{}); err != nil || out.Sum != width*(width-1) {
			b.Fatal(out.Sum, err)
		}
	}
	perNode(b, width+2)
}

// BenchmarkStreamFanOut100 is FanOut100 streamed: every task's start and
// end and every step go through the stream.
func BenchmarkStreamFanOut100(b *testing.B) {
	c, err := benchshapes.FanOut(100)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range c.Stream(ctx, benchshapes.FanState{}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n < 2*102 {
			b.Fatal("events:", n)
		}
	}
	perNode(b, 102)
}
