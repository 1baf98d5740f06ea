package sqlite

import (
	"testing"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

// BenchmarkStore measures the store at each synchronous level, and
// graph.MemorySaver for reference, with checkpointtest.Benchmark.
func BenchmarkStore(b *testing.B) {
	for _, level := range []Synchronous{SyncNormal, SyncFull} {
		b.Run(string(level), func(b *testing.B) {
			checkpointtest.Benchmark(b, func(b *testing.B) graph.Checkpointer { return openTemp(b, WithSynchronous(level)) })
		})
	}
	b.Run("memory", func(b *testing.B) {
		checkpointtest.Benchmark(b, func(*testing.B) graph.Checkpointer { return graph.NewMemorySaver() })
	})
}
