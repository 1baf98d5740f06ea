package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/telemetry"
)

func TestMeterRunRecordsStatusAndKnownCost(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := telemetry.ContextWith(context.Background(), telemetry.New(nil, telemetry.Options{MeterProvider: mp}))
	usage := llm.UsageByRole{
		llm.RoleAnswer:     {Calls: 1, Usage: llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000}},
		llm.RoleReflection: {Calls: 2, Usage: llm.Usage{PromptTokens: 500}},
		"compaction":       {Calls: 1, Usage: llm.Usage{PromptTokens: 1_000_000}}, // priced at the reflection model
		llm.RoleQuery:      {Calls: 1, Usage: llm.Usage{PromptTokens: 10}},
	}
	models := map[string]string{llm.RoleAnswer: "gemini:gemini-2.5-pro", llm.RoleReflection: "gemini:gemini-2.5-flash",
		llm.RoleQuery: "compatible:local-x"}
	app.MeterRun(ctx, telemetry.RunKindResearch, runstore.StatusDone, usage, models, nil)
	app.MeterRun(ctx, telemetry.RunKindResearch, runstore.StatusFailed, nil, models, nil)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	runs := map[string]int64{}
	usd := map[string]float64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch m.Name {
		case telemetry.MetricRuns:
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				kind, _ := p.Attributes.Value(telemetry.AttrRunKind)
				status, _ := p.Attributes.Value(telemetry.AttrRunStatus)
				runs[kind.AsString()+" "+status.AsString()] += p.Value
			}
		case telemetry.MetricCost:
			for _, p := range m.Data.(metricdata.Sum[float64]).DataPoints {
				role, _ := p.Attributes.Value(telemetry.AttrRole)
				model, _ := p.Attributes.Value(telemetry.AttrGenAIRequestModel)
				usd[role.AsString()+" "+model.AsString()] += p.Value
			}
		}
	}
	assert.Equal(t, map[string]int64{"research done": 1, "research failed": 1}, runs)
	require.Len(t, usd, 3, "the query role's price is unknown: no point, never $0: %v", usd)
	assert.InDelta(t, 1.25+1.0, usd["answer gemini-2.5-pro"], 1e-9)
	assert.InDelta(t, 0.30*500/1e6, usd["reflection gemini-2.5-flash"], 1e-12)
	assert.InDelta(t, 0.30, usd["compaction gemini-2.5-flash"], 1e-9)
}

func TestMeterRunWithoutTelemetryRecordsNothing(t *testing.T) {
	// No telemetry in the context: nothing to record, and no panic.
	app.MeterRun(context.Background(), telemetry.RunKindAgent, runstore.StatusDone, llm.UsageByRole{llm.RoleAgent: {Calls: 1}}, nil, nil)
}
