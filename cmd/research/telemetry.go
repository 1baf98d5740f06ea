package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/telemetry/export"
)

// shutdownTimeout bounds the export of the last spans when the command ends.
const shutdownTimeout = 5 * time.Second

// startTelemetry sets tracing up before any command runs: from the OTEL_*
// variables (OTLP over HTTP) and --trace FILE (OTLP/JSON). With neither,
// nothing is set up and nothing is traced. The command's context carries
// the telemetry, so every graph run, model call, search and page read
// below it is a span of one trace.
func (c *cli) startTelemetry(cmd *cobra.Command, _ []string) error {
	p, err := export.Start(cmd.Context(), export.Config{TraceFile: c.traceFile, ServiceVersion: version})
	if err != nil {
		return usageErr("%v", err)
	}
	if p == nil {
		return nil
	}
	c.tel = p
	cmd.SetContext(telemetry.ContextWith(cmd.Context(), p.Tel()))
	return nil
}

// stopTelemetry exports the spans still buffered.
func (c *cli) stopTelemetry() {
	if c.tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := c.tel.Shutdown(ctx); err != nil {
		c.logger().Warn("exporting the trace failed; some spans are lost", "err", err)
	}
	c.tel = nil
}

// traced adds trace_id and span_id to log records when tracing is on.
func (c *cli) traced(h slog.Handler) slog.Handler {
	if c.tel == nil {
		return h
	}
	return telemetry.LogHandler(h)
}

// usageOf is what a research run spent, per role; nil without a report.
func usageOf(rep *research.Report) llm.UsageByRole {
	if rep == nil {
		return nil
	}
	return rep.Usage
}
