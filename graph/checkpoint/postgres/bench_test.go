package postgres

import (
	"testing"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

// BenchmarkStore measures the store with checkpointtest.Benchmark, each
// part in a fresh schema.
func BenchmarkStore(b *testing.B) {
	checkpointtest.Benchmark(b, func(b *testing.B) graph.Checkpointer { return freshSaver(b) })
}
