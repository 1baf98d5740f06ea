package nodes

import (
	"context"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
)

// FailedUsage is what a failed attempt of a model-calling node spent: its
// calls, failed ones included, and the tokens they reported. A failed
// attempt writes no update, so its usage cannot reach the state's usage
// field; the node emits a FailedUsage instead (graph.Emit), once per failed
// attempt — retried ones too, whose errors the graph does not report — and
// whoever drives the run adds it to the run's usage. Agent.Run, Flow.Run and
// research's Run do; a caller of graph.Compiled.Stream adds the Usage of the
// EventCustom values of this type to the usage of the final state.
// Attempts that succeed write their usage to the state as before, so
// nothing is counted twice.
type FailedUsage struct {
	Usage llm.UsageByRole
}

// FailWithUsage is how a model-calling node fails after spending usage: it
// emits usage to the run's stream as a FailedUsage, and returns err
// wrapped in an *llm.UsageError carrying it (added to the usage of an
// *llm.UsageError already in err's chain, which was emitted by whoever made
// it). err comes back unchanged when it is nil or nothing was spent.
func FailWithUsage(ctx context.Context, err error, usage llm.UsageByRole) error {
	if err == nil || len(usage) == 0 {
		return err
	}
	graph.Emit(ctx, FailedUsage{Usage: usage})
	return &llm.UsageError{Err: err, Usage: llm.UsageOfError(err).Merge(usage)}
}

// failWith is FailWithUsage with what meter recorded; err unchanged for a
// nil meter.
func failWith(ctx context.Context, err error, meter *llm.Meter) error {
	if meter == nil {
		return err
	}
	return FailWithUsage(ctx, err, meter.Snapshot())
}
