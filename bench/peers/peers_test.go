// Package peers measures deepgraph's graph engine next to cloudwego/eino on
// the same three shapes, in one run, so the ratios compare like with like.
// It is its own module so that eino never enters deepgraph's go.mod; run it
// with ./run.sh.
package peers

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudwego/eino/compose"

	"github.com/deepgraph/deepgraph/internal/benchshapes"
)

type small struct{ A, B, C int }

func einoChain(b *testing.B) compose.Runnable[small, small] {
	g := compose.NewGraph[small, small]()
	must(b, g.AddLambdaNode("a", compose.InvokableLambda(func(_ context.Context, s small) (small, error) { s.A++; return s, nil })))
	must(b, g.AddLambdaNode("b", compose.InvokableLambda(func(_ context.Context, s small) (small, error) { s.B = s.A + 1; return s, nil })))
	must(b, g.AddLambdaNode("c", compose.InvokableLambda(func(_ context.Context, s small) (small, error) { s.C = s.B + 1; return s, nil })))
	must(b, g.AddEdge(compose.START, "a"))
	must(b, g.AddEdge("a", "b"))
	must(b, g.AddEdge("b", "c"))
	must(b, g.AddEdge("c", compose.END))
	r, err := g.Compile(context.Background())
	must(b, err)
	return r
}

// einoFanOut is eino's closest equivalent of 1 → N → 1: eino has no Send, so
// the N branches are N static nodes whose outputs are gathered into a map
// by output key.
func einoFanOut(b *testing.B, width int) compose.Runnable[int, int] {
	g := compose.NewGraph[int, int]()
	must(b, g.AddLambdaNode("split", compose.InvokableLambda(func(_ context.Context, n int) (int, error) { return n, nil })))
	must(b, g.AddEdge(compose.START, "split"))
	must(b, g.AddLambdaNode("join", compose.InvokableLambda(func(_ context.Context, m map[string]any) (int, error) {
		sum := 0
		for _, v := range m {
			sum += v.(int)
		}
		return sum, nil
	})))
	for i := range width {
		name := fmt.Sprintf("work%d", i)
		must(b, g.AddLambdaNode(name, compose.InvokableLambda(func(_ context.Context, _ int) (int, error) { return i * 2, nil }),
			compose.WithOutputKey(name)))
		must(b, g.AddEdge("split", name))
		must(b, g.AddEdge(name, "join"))
	}
	must(b, g.AddEdge("join", compose.END))
	r, err := g.Compile(context.Background())
	must(b, err)
	return r
}

func einoLoop(b *testing.B, iterations int) compose.Runnable[int, int] {
	g := compose.NewGraph[int, int]()
	must(b, g.AddLambdaNode("inc", compose.InvokableLambda(func(_ context.Context, n int) (int, error) { return n + 1, nil })))
	must(b, g.AddEdge(compose.START, "inc"))
	must(b, g.AddBranch("inc", compose.NewGraphBranch(func(_ context.Context, n int) (string, error) {
		if n < iterations {
			return "inc", nil
		}
		return compose.END, nil
	}, map[string]bool{"inc": true, compose.END: true})))
	r, err := g.Compile(context.Background(), compose.WithMaxRunSteps(10*iterations))
	must(b, err)
	return r
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkChain3(b *testing.B) {
	ctx := context.Background()
	b.Run("deepgraph", func(b *testing.B) {
		c, err := benchshapes.Chain()
		must(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := c.Invoke(ctx, benchshapes.ChainState{}); err != nil || out.C != 3 {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		r := einoChain(b)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := r.Invoke(ctx, small{}); err != nil || out.C != 3 {
				b.Fatal(out, err)
			}
		}
	})
}

func BenchmarkFanOut100(b *testing.B) {
	ctx := context.Background()
	b.Run("deepgraph", func(b *testing.B) {
		c, err := benchshapes.FanOut(100)
		must(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := c.Invoke(ctx, benchshapes.FanState{}); err != nil || out.Sum != 9900 {
				b.Fatal(out.Sum, err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		r := einoFanOut(b, 100)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := r.Invoke(ctx, 0); err != nil || out != 9900 {
				b.Fatal(out, err)
			}
		}
	})
}

func BenchmarkLoop100(b *testing.B) {
	ctx := context.Background()
	b.Run("deepgraph", func(b *testing.B) {
		c, err := benchshapes.Loop(100)
		must(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := c.Invoke(ctx, benchshapes.LoopState{}); err != nil || out.N != 100 {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		r := einoLoop(b, 100)
		b.ReportAllocs()
		for b.Loop() {
			if out, err := r.Invoke(ctx, 0); err != nil || out != 100 {
				b.Fatal(out, err)
			}
		}
	})
}
