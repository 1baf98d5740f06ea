package graph_test

import (
	"testing"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

func TestMemorySaverConformance(t *testing.T) {
	checkpointtest.Run(t, func(*testing.T) graph.Checkpointer { return graph.NewMemorySaver() })
}

func TestMemorySaverOwnership(t *testing.T) {
	checkpointtest.Ownership(t, func(t *testing.T, n int) []graph.Checkpointer {
		s := graph.NewMemorySaver()
		out := make([]graph.Checkpointer, n)
		for i := range out {
			out[i] = s
		}
		return out
	})
}
