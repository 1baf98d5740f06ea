package graph_test

import (
	"testing"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

func TestMemorySaverConformance(t *testing.T) {
	checkpointtest.Run(t, func(*testing.T) graph.Checkpointer { return graph.NewMemorySaver() })
}
