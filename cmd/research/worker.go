//go:build temporal

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

// workerFlags are research worker's own flags.
type workerFlags struct {
	temporal    app.Temporal
	concurrency int
	stopTimeout time.Duration
	heartbeat   time.Duration
}

// Defaults of research worker.
const (
	defaultWorkerConcurrency = 64
	defaultWorkerStop        = 30 * time.Second
	// --heartbeat's bounds: more often than every 100ms loads the server
	// for nothing; past 10 minutes a lost worker's tasks wait half an hour.
	minHeartbeat = 100 * time.Millisecond
	maxHeartbeat = 10 * time.Minute
)

func (c *cli) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := workerCommand()
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return c.runWorker(cmd, f) }
	addTemporalFlags(cmd.Flags(), &f.temporal, "the Temporal server's frontend address, HOST:PORT (required)", false)
	cmd.Flags().IntVar(&f.concurrency, "concurrency", defaultWorkerConcurrency, "most tasks (model calls, searches) this worker runs at once")
	cmd.Flags().DurationVar(&f.stopTimeout, "stop-timeout", defaultWorkerStop, "on SIGINT or SIGTERM, how long running tasks may take to finish before they are cancelled (and run again elsewhere)")
	cmd.Flags().DurationVar(&f.heartbeat, "heartbeat", temporalresearch.DefaultHeartbeat, "how often a running task tells Temporal it is alive; a lost worker's tasks move to another worker after 3×this")
	return cmd
}

// workerWhy explains the refusal of the flags that make no sense on a
// worker.
func workerWhy(name string) string {
	switch name {
	case "format":
		return "does not apply to a worker: the client that submits a run chooses its report's format"
	case "store":
		return "does not apply to a worker: Temporal keeps the runs (their histories), not a local store"
	case "timeout":
		return "does not apply to a worker: the client sets each run's time limit (research --temporal HOST:PORT --timeout D, or research batch … --timeout D)"
	}
	return ""
}

func (c *cli) runWorker(cmd *cobra.Command, f workerFlags) error {
	if f.temporal.Address == "" {
		return usageErr("research worker needs the Temporal server: --temporal HOST:PORT (e.g. localhost:7233)")
	}
	if err := refuseFlags(cmd, func(name string) bool {
		return workerWhy(name) == "" && !strings.HasPrefix(flagKey(name), "serve.")
	}, workerWhy); err != nil {
		return err
	}
	if err := checkTemporal(f.temporal); err != nil {
		return err
	}
	if f.concurrency < 1 || f.concurrency > 100000 {
		return usageErr("--concurrency %d: use a whole number from 1 to 100000 (tasks this worker runs at once)", f.concurrency)
	}
	if f.stopTimeout < 0 {
		return usageErr("--stop-timeout %s: use a duration of 0 or more, e.g. 30s", f.stopTimeout)
	}
	if f.heartbeat < minHeartbeat || f.heartbeat > maxHeartbeat {
		return usageErr("--heartbeat %s: use a duration from %s to %s, e.g. 2s (a lost worker's tasks move after 3×--heartbeat)", f.heartbeat, minHeartbeat, maxHeartbeat)
	}
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	if cfg.MaxCost > 0 {
		// costLimit gives a researcher one budget: on a worker, every run it
		// does would draw on it.
		return usageErr("max_cost (%s) limits what one run spends, and a worker's runs would share it as one budget: drop it where research worker runs (a per-run limit on Temporal is not available yet)",
			cfg.Source("max_cost"))
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)

	// The researcher is built as a local run builds it, without a store:
	// Temporal's history is what survives.
	r, err := app.NewResearch(ctx, cfg, logger, nil)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return err
	}
	defer r.Close()
	x, err := temporalresearch.New(r.Researcher, temporalresearch.Options{
		Models: r.Models.Specs(),
		Graph:  temporalgraph.Options[research.State]{Heartbeat: f.heartbeat},
	})
	if err != nil {
		return err
	}
	tc, err := c.dialTemporal(ctx, f.temporal)
	if err != nil {
		return err
	}
	defer tc.Close()
	w := worker.New(tc, f.temporal.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: f.concurrency,
		WorkerStopTimeout:                  f.stopTimeout,
	})
	x.Register(w)
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on Temporal at %s: %s", f.temporal.Address, app.OneLine(err.Error(), 300))
	}
	c.console.line(workerReadyLine(f, r))
	<-ctx.Done()
	c.console.line(fmt.Sprintf("Stopping: no new tasks; running ones may take up to %s to finish (Ctrl-C again to quit now)", f.stopTimeout))
	w.Stop()
	c.console.line("Stopped")
	return nil
}

// workerReadyLine says the worker is up: where, and with which models and
// back end (names only, never keys).
func workerReadyLine(f workerFlags, r *app.Research) string {
	t := f.temporal
	blobs := "large payloads compressed (no --blob-dir)"
	if t.BlobDir != "" {
		blobs = "large payloads in " + t.BlobDir
	}
	return fmt.Sprintf("Worker ready on Temporal at %s (namespace %s, task queue %s): %s; up to %d tasks at once; %s; heartbeat every %s (a lost worker's tasks move after %s)",
		t.Address, t.Namespace, t.TaskQueue, researching(r.Backend.Plan, r.Models), f.concurrency, blobs, f.heartbeat, 3*f.heartbeat)
}
