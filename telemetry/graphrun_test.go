package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/telemetry"
)

type runState struct{ N int }

var runN = graph.Value(func(s *runState) *int { return &s.N })

// The graph.run span, the root of a CLI run's trace, records how the run
// ended: a failed run is an error with its error.type; a run paused for an
// answer is marked graph.interrupted and is not an error.
func TestGraphRunSpanRecordsHowTheRunEnded(t *testing.T) {
	run := func(t *testing.T, node graph.NodeFunc[runState], opts ...graph.RunOption) tracetest.SpanStub {
		tel, exp, _ := newTel(telemetry.Options{})
		g := graph.New[runState](runN)
		g.AddNode("work", node)
		g.AddSequence(graph.Start, "work", graph.End)
		c, err := g.Compile(graph.WithCheckpointer(graph.NewMemorySaver()))
		require.NoError(t, err)
		_, err = c.Invoke(telemetry.ContextWith(context.Background(), tel), runState{}, opts...)
		require.Error(t, err)
		for _, s := range exp.GetSpans() {
			if s.Name == "graph.run" {
				return s
			}
		}
		t.Fatal("no graph.run span")
		return tracetest.SpanStub{}
	}
	t.Run("failed", func(t *testing.T) {
		s := run(t, func(context.Context, runState) (graph.Update[runState], error) {
			return graph.Update[runState]{}, context.DeadlineExceeded
		})
		assert.Equal(t, codes.Error, s.Status.Code)
		assert.Equal(t, "timeout", attrs(s)["error.type"].AsString())
	})
	t.Run("paused", func(t *testing.T) {
		s := run(t, func(ctx context.Context, _ runState) (graph.Update[runState], error) {
			if _, err := graph.Interrupt[string](ctx, "approve?"); err != nil {
				return graph.Update[runState]{}, err
			}
			return graph.Writes(runN.Set(1)), nil
		}, graph.Thread("t1"))
		assert.Equal(t, codes.Unset, s.Status.Code, "a pause is not a failure")
		assert.True(t, attrs(s)["graph.interrupted"].AsBool())
	})
}
