//go:build temporal

package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/app/temporalapp"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

// Research on Temporal from the command line: research --temporal submits
// one run and follows it (this file), research worker runs the workers
// (worker.go), research batch submits a file of questions (batch.go).

// perRunFlags are the flags of the configuration keys a client sends with
// each run on Temporal (temporalresearch.Request); the workers'
// configuration decides the others.
var perRunFlags = map[string]bool{"queries": true, "loops": true, "effort": true, "timeout": true}

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
	case "thread":
		return "is not available with --temporal: follow-up questions continue a locally stored run's thread"
	case "store":
		return "does not apply with --temporal: Temporal keeps the run (its history), not a local store"
	case "trace":
		return "does not apply with --temporal: the workers run the models and searches; trace them there (research worker --trace FILE, or OTEL_EXPORTER_OTLP_ENDPOINT)"
	}
	return ""
}

// request is the per-run part of the configuration: queries and loops when
// the client's configuration sets them (a flag, --effort, a variable or
// its config file), otherwise the workers' configuration decides; and the
// run's time limit (timeout), which the workers enforce.
func request(cfg *config.Config, question string) temporalresearch.Request {
	req := temporalresearch.Request{Question: question, Timeout: cfg.Timeout}
	if cfg.Source("number_of_initial_queries").Kind != config.FromDefault {
		req.InitialQueries = cfg.InitialQueries
	}
	if cfg.Source("max_research_loops").Kind != config.FromDefault {
		req.MaxLoops = cfg.MaxLoops
	}
	return req
}

// newRunID is a fresh workflow ID for a run: "research-" and a run ID of
// the kind the local store gives (runstore.NewID).
func newRunID() string { return "research-" + runstore.NewID() }

// dialTemporal connects to Temporal with the SDK logging through the
// program's logger.
func (c *cli) dialTemporal(ctx context.Context, t app.Temporal) (client.Client, error) {
	tc, err := temporalapp.Dial(ctx, t, c.logger())
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

// onTemporal runs research "…" --temporal HOST:PORT: the configuration and
// the question as a local run has them, then the run on Temporal.
func (c *cli) onTemporal(cmd *cobra.Command, args []string) error {
	cfg, question, err := c.prepareResearch(cmd, args)
	if err != nil {
		return err
	}
	return c.runTemporal(cmd, cfg, question)
}

// runTemporal submits a research run to Temporal and follows it like a
// local run: the timeline on stderr, the report on stdout or --out, the
// same exit statuses; --review asks on the terminal and answers the run.
// Ctrl-C cancels the run on Temporal and prints its incomplete report.
func (c *cli) runTemporal(cmd *cobra.Command, cfg *config.Config, question string) error {
	if err := refuseFlags(cmd, func(name string) bool {
		return clientFlags[name] || perRunFlags[name] || name == "format" || name == "out" || name == "review"
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
	req := request(cfg, question)
	req.Review = c.review
	run, err := temporalresearch.Start(ctx, tc, client.StartWorkflowOptions{ID: newRunID(), TaskQueue: t.TaskQueue}, req)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return fmt.Errorf("submitting the run to Temporal at %s: %s", t.Address, app.OneLine(err.Error(), 300))
	}
	f := &temporalFollow{c: c, cfg: cfg, tc: tc, run: run, start: time.Now()}
	f.tl = newTimeline(c.console, f.start)
	f.tl.line(fmt.Sprintf("Run %s on Temporal at %s (namespace %s, task queue %s)", run.ID(), t.Address, t.Namespace, t.TaskQueue))
	if workersPolling(ctx, tc, t.TaskQueue) == 0 {
		f.tl.line(noWorkerHint(t))
	}
	c.console.setStatus("waiting for a worker")
	followCtx, stopFollow := context.WithCancelCause(ctx)
	defer stopFollow(nil)
	rv := &temporalReviews{f: f, stop: stopFollow, asked: map[string]bool{}}
	rv.ctx, rv.cancel = context.WithCancel(followCtx)
	out, runErr := run.Follow(followCtx, 0, func(e temporalgraph.Entry) { observeEntry(f.tl, e) }, rv.onWait)
	rv.end()
	switch {
	case context.Cause(ctx) == errInterrupted:
		return f.cancelled(ctx)
	case rv.paused != nil:
		c.console.stop()
		c.pausedOnTemporal(t, req, run.ID(), rv.paused)
		return &exitError{code: exitNeedsInput}
	}
	c.console.stop()
	if runErr == nil {
		if err := f.show(ctx, out, nil, nil, false); err != nil {
			return err
		}
		if out != nil {
			return uncited(out.Report)
		}
		return nil
	}
	out, _ = temporalresearch.OutcomeOf(runErr)
	if temporalresearch.TimedOut(runErr) {
		// As a local run's --timeout: the report gathered so far, marked
		// incomplete, and exit status 1.
		if err := f.show(ctx, out, runFailure(run.ID(), runErr), fmt.Errorf("timed out after %s", req.Timeout), true); err != nil {
			return err
		}
		return fmt.Errorf("the run did not finish within the timeout of %s (timeout); the report above is incomplete", req.Timeout)
	}
	runErr = runFailure(run.ID(), runErr)
	if err := f.show(ctx, out, runErr, errors.New(c.console.redact(runErr.Error())), false); err != nil {
		return err
	}
	return runErr
}

// temporalFollow is a run on Temporal that research --temporal follows.
type temporalFollow struct {
	c     *cli
	cfg   *config.Config
	tc    client.Client
	run   *temporalgraph.Run[*temporalresearch.Outcome]
	tl    *timeline
	start time.Time
}

// show ends the timeline of a run that ended with out (nil: no report) and
// writes its report as a local run does: the models the workers used, the
// summary line with the cost at the client's prices, and the report — a
// stopped run's only when it has an answer or goes out as JSON, unless
// always (interrupted or timed out). runErr says the run did not finish;
// docErr is the error its JSON document carries. It returns runErr when
// there is no report, or the error of writing it.
func (f *temporalFollow) show(ctx context.Context, out *temporalresearch.Outcome, runErr, docErr error, always bool) error {
	if out == nil || out.Report == nil {
		return runErr
	}
	rep, cfg := out.Report, f.cfg
	if rep.Timings.Total == 0 {
		rep.Timings.Total = runDuration(ctx, f.tc, f.run.ID(), f.run.RunID(), time.Since(f.start))
	}
	if len(out.Models) > 0 {
		f.tl.line("Models (on the workers): " + modelList(out.Models))
	}
	f.tl.summary(rep, runErr, app.CostText(rep.Usage, out.Models, cfg.Prices))
	doc, err := app.PricedResearchDocument(app.RunRef{RunID: f.run.ID()}, rep, out.Models, cfg.Prices, docErr)
	if err != nil {
		return err
	}
	if runErr == nil || always || rep.Answer != "" || cfg.Format == config.FormatJSON {
		return f.c.writeReport(cfg, rep, doc)
	}
	return nil
}

// cancelWait bounds how long Ctrl-C waits for the cancelled run's report.
const cancelWait = 15 * time.Second

// cancelled cancels the run on Temporal after Ctrl-C, waits (at most
// cancelWait; a second Ctrl-C quits at once) for the report of what it had
// gathered, and prints it as a local run interrupted does: exit status 130.
func (f *temporalFollow) cancelled(ctx context.Context) error {
	c, id := f.c, f.run.ID()
	c.console.stop()
	bg := context.WithoutCancel(ctx)
	cctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := f.tc.CancelWorkflow(cctx, id, f.run.RunID()); err != nil {
		c.console.errorLine(fmt.Sprintf("interrupted, but cancelling run %s on Temporal failed: %s (cancel it with: temporal workflow cancel --workflow-id %s)",
			id, app.OneLine(err.Error(), 200), id))
		return &exitError{code: exitInterrupted}
	}
	if workersPolling(bg, f.tc, f.c.temporal.TaskQueue) == 0 {
		// Nobody is there to end the run and write its report.
		c.console.errorLine(fmt.Sprintf("interrupted: run %s is cancelled on Temporal (no worker is up to write its incomplete report)", id))
		return &exitError{code: exitInterrupted}
	}
	f.tl.line(fmt.Sprintf("Cancelling run %s on Temporal: waiting up to %s for its incomplete report (Ctrl-C again to quit now)", id, cancelWait))
	wctx, wcancel := context.WithTimeout(bg, cancelWait)
	defer wcancel()
	out, err := f.run.Result(wctx)
	switch {
	case err == nil:
		// It finished before the cancellation reached it.
		if err := f.show(bg, out, nil, nil, true); err != nil {
			return err
		}
	default:
		if out, _ = temporalresearch.OutcomeOf(err); out == nil {
			why := "its report did not come"
			if wctx.Err() != nil {
				why = fmt.Sprintf("its report did not come within %s", cancelWait)
			}
			c.console.errorLine(fmt.Sprintf("interrupted: run %s is cancelled on Temporal; %s (temporal workflow show --workflow-id %s)", id, why, id))
			return &exitError{code: exitInterrupted}
		}
		if err := f.show(bg, out, errInterrupted, errInterrupted, true); err != nil {
			return err
		}
	}
	c.console.errorLine(fmt.Sprintf("interrupted: run %s is cancelled on Temporal", id))
	return &exitError{code: exitInterrupted}
}

// temporalReviews asks on the terminal for the reviews a run on Temporal
// waits for (--review) and sends the answers, while Follow follows the
// run; when nobody can answer here, it stops following: the run waits on
// Temporal (paused).
type temporalReviews struct {
	f      *temporalFollow
	ctx    context.Context    // asking ends with it: Follow's end, or Ctrl-C
	cancel context.CancelFunc // ends ctx
	stop   context.CancelCauseFunc
	asked  map[string]bool // the interrupts shown, by ID
	wg     sync.WaitGroup
	mu     sync.Mutex
	paused *pendingReview // what the run waits for, once nobody here can answer
}

// pendingReview is a review a run waits for.
type pendingReview struct {
	id  string // the interrupt's
	req research.ReviewRequest
}

// errPaused stops following a run that waits for a review nobody here can
// give.
var errPaused = errors.New("paused for a review")

// onWait is Follow's: the run waits on pis. Each review is shown on the
// timeline once, then asked on the terminal (in the background, so that
// Follow goes on and sees the run end if it does meanwhile).
func (r *temporalReviews) onWait(pis []graph.PendingInterrupt) {
	for _, pi := range pis {
		if r.asked[pi.ID] {
			continue
		}
		req, err := graph.PayloadOf[research.ReviewRequest](pi)
		if err != nil {
			continue // not a review: nothing here answers it
		}
		r.asked[pi.ID] = true
		r.f.tl.observe(research.Activity{Kind: research.ActivityReview, Node: pi.Node, Step: pi.Step, Queries: req.Queries, Loop: req.Loop})
		p := &pendingReview{id: pi.ID, req: req}
		if !r.f.c.canAsk() {
			r.pause(p)
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.answer(p)
		}()
		return // one review at a time: the next comes once this one is answered
	}
}

// answer asks for a review on the terminal and sends the answer.
func (r *temporalReviews) answer(p *pendingReview) {
	c, run := r.f.c, r.f.run
	ans, err := c.askReview(r.ctx, &p.req)
	switch {
	case r.ctx.Err() != nil:
		return
	case err != nil:
		if !errors.Is(err, errNoAnswer) {
			c.console.errorLine(err.Error())
		}
		r.pause(p)
		return
	}
	c.console.setStatus("researching")
	// Answer returns once the run has the answer: without a worker, when
	// one comes (as the run itself waits), or when Follow ends.
	err = run.Answer(r.ctx, p.id, ans)
	if err == nil || r.ctx.Err() != nil {
		return
	}
	c.console.errorLine(fmt.Sprintf("answering the review of run %s failed: %s", run.ID(), app.OneLine(err.Error(), 300)))
	// Still waiting: it waits on Temporal for an answer from elsewhere.
	// Not waiting any more (it ended, or timed out): Follow tells.
	if pr, perr := run.Progress(r.ctx, 0); perr == nil && slices.ContainsFunc(pr.Interrupts, func(pi graph.PendingInterrupt) bool { return pi.ID == p.id }) {
		r.pause(p)
	}
}

// pause stops following: the run waits on Temporal for p.
func (r *temporalReviews) pause(p *pendingReview) {
	r.mu.Lock()
	if r.paused == nil {
		r.paused = p
	}
	r.mu.Unlock()
	r.stop(errPaused)
}

// end ends the asking, once Follow has returned.
func (r *temporalReviews) end() {
	r.cancel()
	r.wg.Wait()
}

// pausedOnTemporal says how to answer a run that waits on Temporal for a
// review, as pausedForReview does for a local run.
func (c *cli) pausedOnTemporal(t app.Temporal, req temporalresearch.Request, id string, p *pendingReview) {
	c.console.plain(fmt.Sprintf("Paused: run %s waits on Temporal for a review of the queries it is about to search:\n%s\n", id, reviewText(&p.req)))
	until := "It waits there until it is answered or cancelled"
	if req.Timeout > 0 {
		until += fmt.Sprintf(" (or its timeout of %s passes)", req.Timeout)
	}
	c.console.plain(until + `. Answer it with Temporal's CLI — "value" {} approves the queries, {"stop":true} writes the answer now, {"queries":["…","…"]} replaces them:` + "\n")
	c.console.plain(fmt.Sprintf("  temporal workflow update execute --address %s --namespace %s --workflow-id %s --name %s --input '{\"id\":\"%s\",\"value\":{}}'\n",
		t.Address, t.Namespace, id, temporalgraph.UpdateAnswer, p.id))
}

// timeoutPrefix begins the message of a run that passed its timeout.
const timeoutPrefix = "research: the run took longer than its timeout"

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
	case temporalresearch.TimedOut(err) && errors.As(err, &appErr):
		return fmt.Errorf("run %s took longer than its timeout%s", id, strings.TrimPrefix(appErr.Message(), timeoutPrefix))
	case errors.As(err, &appErr):
		msg := appErr.Message()
		if m := nodeFailure().FindStringSubmatch(msg); m != nil {
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
var nodeFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^graph: node "([^"]*)" failed in step \d+(?: after \d+ attempts)?: `)
})

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
