package app

import (
	"context"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/telemetry"
)

// MeterRun records a finished run in the metrics of the telemetry ctx
// carries (telemetry.From): one deepgraph.runs point for its kind and
// status, and deepgraph.cost by role and model for the roles whose
// model's price is known — each role priced at its model in models, as
// CostOf prices it. Without telemetry, or without a MeterProvider, it
// records nothing and prices nothing.
//
// kind is one of telemetry's RunKind constants (a runstore.Kind converts:
// string(runstore.KindAgent)).
func MeterRun(ctx context.Context, kind string, status runstore.Status, usage llm.UsageByRole, models map[string]string, prices llm.Prices) {
	tel := telemetry.From(ctx)
	if !tel.Metered() {
		return
	}
	cost := prices.CostOf(usage, func(role string) string { return roleSpec(models, role) })
	tel.RunEnded(context.WithoutCancel(ctx), kind, string(status), cost)
}
