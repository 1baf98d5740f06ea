package main

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

// Research on Temporal from the command line: research --temporal submits
// one run and follows it (this file), research worker runs the workers
// (worker.go), research batch submits a file of questions (batch.go).

// addTemporalFlags adds --temporal, --namespace, --task-queue and
// --blob-dir to fs, into t; what is --temporal's help. optional says
// --temporal may be left out (the other flags then say they need it).
func addTemporalFlags(fs *pflag.FlagSet, t *app.Temporal, what string, optional bool) {
	with := ""
	if optional {
		with = " (with --temporal)"
	}
	fs.StringVar(&t.Address, "temporal", "", what)
	fs.StringVar(&t.Namespace, "namespace", app.DefaultTemporalNamespace, "Temporal namespace of the runs"+with)
	fs.StringVar(&t.TaskQueue, "task-queue", app.DefaultTemporalTaskQueue, "task queue the research workers poll"+with)
	fs.StringVar(&t.BlobDir, "blob-dir", "", "directory for payloads too large for Temporal's history, shared by every worker and client"+with+
		"; without it large payloads are only compressed")
}

// checkTemporal checks the Temporal settings (usage errors).
func checkTemporal(t app.Temporal) error {
	if err := t.Check(); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	return nil
}

// temporalOnly are the flags that only mean something with --temporal.
var temporalOnly = []string{"namespace", "task-queue", "blob-dir"}

// refuseWithout refuses the Temporal flags given without --temporal.
func refuseWithout(cmd *cobra.Command) error {
	for _, name := range temporalOnly {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usageErr("--%s is a setting of runs on Temporal: add --temporal HOST:PORT, or drop --%s", name, name)
		}
	}
	return nil
}

// perRunKeys are the configuration keys a client sends with each run on
// Temporal (temporalresearch.Request); the workers' configuration decides
// the others.
var perRunFlags = map[string]bool{"queries": true, "loops": true, "effort": true}

// clientFlags are the flags of the client side of a run on Temporal that
// are not configuration keys of the workers.
var clientFlags = map[string]bool{
	"temporal": true, "namespace": true, "task-queue": true, "blob-dir": true,
	"config": true, "quiet": true, "verbose": true, "no-input": true, "no-save": true, "help": true,
}

// refuseFlags refuses the flags given on cmd that are not allowed (allow
// names them), with one line per flag saying why and what to do instead;
// why may explain particular flags (empty: the generic reason).
func refuseFlags(cmd *cobra.Command, allow func(name string) bool, why func(name string) string) error {
	var lines []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if allow(f.Name) {
			return
		}
		msg := why(f.Name)
		if msg == "" {
			switch key := flagKey(f.Name); {
			case strings.HasPrefix(key, "serve."):
				msg = "is a setting of research serve"
			case key != "":
				msg = "configures the workers: set it where research worker runs (flag, DEEPGRAPH_" +
					strings.ToUpper(strings.ReplaceAll(key, ".", "_")) + " or the config file's " + key + ")"
			default:
				msg = "does not apply here"
			}
		}
		lines = append(lines, "--"+f.Name+" "+msg)
	})
	if len(lines) == 0 {
		return nil
	}
	sort.Strings(lines)
	return &exitError{code: exitUsage, err: errors.New(strings.Join(lines, "\n"))}
}

// flagKey is the configuration key a flag sets ("" for the flags that are
// not configuration keys).
func flagKey(name string) string {
	for _, k := range config.Keys() {
		if k.Flag == "--"+name {
			return k.Name
		}
	}
	return ""
}

// temporalRunWhy explains the refusal of flags a local run has and a run on
// Temporal has not.
func temporalRunWhy(name string) string {
	switch name {
	case "review":
		return "is not available with --temporal: a run on Temporal does not pause for a review (run it locally to review its queries)"
	case "thread":
		return "is not available with --temporal: follow-up questions continue a locally stored run's thread"
	case "store":
		return "does not apply with --temporal: Temporal keeps the run (its history), not a local store"
	case "timeout":
		return "is not available with --temporal yet: Ctrl-C cancels the run"
	case "trace":
		return "does not apply with --temporal: the workers run the models and searches; trace them there (research worker --trace FILE, or OTEL_EXPORTER_OTLP_ENDPOINT)"
	}
	return ""
}

// request is the per-run part of the configuration: queries and loops when
// the client's configuration sets them (a flag, --effort, a variable or
// its config file); otherwise the workers' configuration decides.
func request(cfg *config.Config, question string) temporalresearch.Request {
	req := temporalresearch.Request{Question: question}
	if cfg.Source("number_of_initial_queries").Kind != config.FromDefault {
		req.InitialQueries = cfg.InitialQueries
	}
	if cfg.Source("max_research_loops").Kind != config.FromDefault {
		req.MaxLoops = cfg.MaxLoops
	}
	return req
}

// newRunID is a fresh workflow ID for a run: research-<10 random letters
// and digits>.
func newRunID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "research-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))[:12]
}

// dialTemporal connects to Temporal with the SDK logging through the
// program's logger.
func (c *cli) dialTemporal(ctx context.Context, t app.Temporal) (client.Client, error) {
	tc, err := app.DialTemporal(ctx, t, c.logger())
	if err != nil && ctx.Err() != nil {
		return nil, &exitError{code: exitInterrupted, err: errInterrupted}
	}
	return tc, err
}

// workersPolling counts the workers polling the task queue for workflow
// tasks; -1 when it is not known.
func workersPolling(ctx context.Context, tc client.Client, queue string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := tc.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return -1
	}
	return len(resp.GetPollers())
}

// noWorkerHint is said when no worker polls the task queue.
func noWorkerHint(t app.Temporal) string {
	return fmt.Sprintf("No worker polls task queue %s yet: the run waits until one does (research worker --temporal %s --namespace %s --task-queue %s)",
		t.TaskQueue, t.Address, t.Namespace, t.TaskQueue)
}

// runTemporal submits a research run to Temporal and follows it like a
// local run: the timeline on stderr, the report on stdout or --out, the
// same exit statuses. Ctrl-C cancels the run on Temporal.
func (c *cli) runTemporal(cmd *cobra.Command, cfg *config.Config, question string) error {
	if err := refuseFlags(cmd, func(name string) bool {
		return clientFlags[name] || perRunFlags[name] || name == "format" || name == "out"
	}, temporalRunWhy); err != nil {
		return err
	}
	if err := checkTemporal(c.temporal); err != nil {
		return err
	}
	ctx := cmd.Context()
	c.console.setQuiet(c.quiet)
	c.console.start("connecting to Temporal")
	tc, err := c.dialTemporal(ctx, c.temporal)
	if err != nil {
		return err
	}
	defer tc.Close()
	t := c.temporal
	run, err := temporalresearch.Start(ctx, tc, client.StartWorkflowOptions{ID: newRunID(), TaskQueue: t.TaskQueue}, request(cfg, question))
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return fmt.Errorf("submitting the run to Temporal at %s: %s", t.Address, app.OneLine(err.Error(), 300))
	}
	start := time.Now()
	tl := newTimeline(c.console, start)
	tl.line(fmt.Sprintf("Run %s on Temporal at %s (namespace %s, task queue %s)", run.ID(), t.Address, t.Namespace, t.TaskQueue))
	if workersPolling(ctx, tc, t.TaskQueue) == 0 {
		tl.line(noWorkerHint(t))
	}
	c.console.setStatus("waiting for a worker")
	out, runErr := run.Follow(ctx, 0, func(e temporalgraph.Entry) { observeEntry(tl, e) }, nil)
	if context.Cause(ctx) == errInterrupted {
		c.console.stop()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := tc.CancelWorkflow(cctx, run.ID(), run.RunID()); err != nil {
			c.console.errorLine(fmt.Sprintf("interrupted, but cancelling run %s on Temporal failed: %s (cancel it with: temporal workflow cancel --workflow-id %s)",
				run.ID(), app.OneLine(err.Error(), 200), run.ID()))
		} else {
			c.console.errorLine(fmt.Sprintf("interrupted: run %s is cancelled on Temporal", run.ID()))
		}
		return &exitError{code: exitInterrupted}
	}
	if runErr != nil {
		out, _ = temporalresearch.OutcomeOf(runErr)
		runErr = runFailure(run.ID(), runErr)
	}
	var rep *research.Report
	if out != nil {
		rep = out.Report
	}
	c.console.stop()
	if rep == nil {
		return runErr
	}
	if rep.Timings.Total == 0 {
		rep.Timings.Total = runDuration(ctx, tc, run.ID(), run.RunID(), time.Since(start))
	}
	tl.summary(rep, runErr, "")
	var docErr error
	if runErr != nil {
		docErr = errors.New(c.console.redact(runErr.Error()))
	}
	doc, err := app.PricedResearchDocument(rep, nil, cfg.Prices, docErr)
	if err != nil {
		return err
	}
	if runErr == nil || rep.Answer != "" || cfg.Format == config.FormatJSON {
		if err := c.writeReport(cfg, rep, doc); err != nil {
			return err
		}
	}
	return runErr
}

// observeEntry shows a timeline entry of a run on Temporal as the local
// timeline shows the activity it describes.
func observeEntry(tl *timeline, e temporalgraph.Entry) {
	a, err := temporalgraph.Decode[research.Activity](e)
	switch {
	case err == nil:
		tl.observe(a)
	case e.Err != "":
		tl.observe(research.Activity{Kind: research.ActivityFailed, Node: e.Node, Step: e.Step, Error: e.Err})
	}
}

// runFailure is the error of a run that failed on Temporal, without the
// SDK's wrapping: what failed, in one line.
func runFailure(id string, err error) error {
	var (
		appErr   *temporal.ApplicationError
		canceled *temporal.CanceledError
		term     *temporal.TerminatedError
		timeout  *temporal.TimeoutError
	)
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message()
		if m := nodeFailure.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("run %s: %s failed: %s", id, m[1], msg[len(m[0]):])
		}
		return fmt.Errorf("run %s failed: %s", id, msg)
	case errors.As(err, &canceled):
		return fmt.Errorf("run %s was cancelled on Temporal", id)
	case errors.As(err, &term):
		return fmt.Errorf("run %s was terminated on Temporal", id)
	case errors.As(err, &timeout):
		return fmt.Errorf("run %s timed out on Temporal", id)
	}
	return fmt.Errorf("run %s: %w", id, err)
}

// nodeFailure is the graph engine's wrapping of a node's error, which
// errorLines unwraps for a local run (graph.NodeError).
var nodeFailure = regexp.MustCompile(`^graph: node "([^"]*)" failed in step \d+(?: after \d+ attempts)?: `)

// runDuration is how long a run took on Temporal, from its start and close
// times; measured when they cannot be read.
func runDuration(ctx context.Context, tc client.Client, id, runID string, measured time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	desc, err := tc.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return measured
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStartTime() == nil || info.GetCloseTime() == nil {
		return measured
	}
	if d := info.GetCloseTime().AsTime().Sub(info.GetStartTime().AsTime()); d > 0 {
		return d
	}
	return measured
}
