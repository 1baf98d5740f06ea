package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/providers"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
)

// errRunTimeout is the cancellation cause of --timeout.
var errRunTimeout = errors.New("run timeout")

func howToConfigure() string { return providers.HowToConfigure() }

// prepareResearch is what a research run needs before it starts, locally or
// on Temporal: the configuration, the question, and a writable --out.
func (c *cli) prepareResearch(cmd *cobra.Command, args []string) (*config.Config, string, error) {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return nil, "", err
	}
	question, err := c.question(args, "no question: run research \"your question\" (or pipe it in); research --help lists the options")
	if err != nil {
		return nil, "", err
	}
	if err := checkOut(c.out); err != nil {
		return nil, "", err
	}
	return cfg, question, nil
}

func (c *cli) runResearch(cmd *cobra.Command, args []string) error {
	if err := mistypedCommand(cmd, args); err != nil {
		return err
	}
	if c.temporal.Address != "" {
		return c.onTemporal(cmd, args)
	}
	cfg, question, err := c.prepareResearch(cmd, args)
	if err != nil {
		return err
	}
	if err := refuseWithout(cmd); err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)
	c.console.start("preparing")

	st, err := c.openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	// A store that fails during the run does not end it: the report is
	// printed, and the run is said not to be kept (exit 8).
	st.GoOnWithoutSaving(logger)
	var thread string
	if c.thread != "" {
		if st == nil {
			return usageErr("--thread continues a stored run, but the store is off (--no-save or store: off)")
		}
		prev, err := st.FindRun(ctx, c.thread)
		if err != nil {
			return usageErr("--thread %s: %v", c.thread, err)
		}
		if prev.Kind != runstore.KindResearch {
			return usageErr("--thread %s: run %s is an agent run; a follow-up question needs a research run", c.thread, prev.ID)
		}
		thread = prev.Thread
	}
	if c.review && st == nil {
		return usageErr("--review pauses the run until you answer, which needs a store (drop --no-save, or set --store)")
	}

	r, err := app.NewResearch(ctx, cfg, logger, checkpointer(st))
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return err
	}
	defer r.Close()
	var tr *app.Tracker
	var opts []research.RunOption
	if st != nil {
		if tr, err = st.Begin(ctx, runstore.KindResearch, question, thread, app.ResearchSettings(cfg, r, c.review), logger); err != nil {
			return err
		}
		opts = append(opts, research.Thread(tr.Run.Thread), research.RunID(tr.Run.ID))
		if c.review {
			opts = append(opts, research.Review(true))
		}
	}
	return c.driveResearch(ctx, cfg, r, st, tr, func(ctx context.Context, more ...research.RunOption) (*research.Report, error) {
		return r.Run(ctx, question, append(opts, more...)...)
	})
}

// driveResearch runs (or resumes) a research run with the timeline, asks
// for reviews on the terminal, records the outcome in the store and prints
// the report.
func (c *cli) driveResearch(ctx context.Context, cfg *config.Config, r *app.Research, st *app.Store, tr *app.Tracker,
	start func(context.Context, ...research.RunOption) (*research.Report, error)) error {
	c.logger().Debug("models", "query", r.Models.Spec("query"), "research", r.Models.Spec("research"),
		"reflection", r.Models.Spec("reflection"), "answer", r.Models.Spec("answer"), "backend", r.Backend.Plan.Why)
	runCtx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, cfg.Timeout, errRunTimeout)
		defer cancel()
	}
	tl := newTimeline(c.console, time.Now())
	tl.header(r.Backend.Plan, r.Models)
	var baseCalls int
	// What the run spent before this process, by role, when it is known:
	// the cost recorded with its progress is of baseUsage and this
	// process's calls, unknown when baseUsage is.
	var baseUsage llm.UsageByRole
	baseKnown := true
	if tr != nil {
		if tr.Resumed {
			// What the run spent before it stopped, from its checkpoints:
			// the run's record may lag them by the last task of a killed
			// process.
			saved, err := r.Saved(ctx, tr.Run.Thread)
			if err == nil {
				recordUsage(tr, saved.Usage, r.Models.Specs(), cfg.Prices)
				baseUsage = saved.Usage
			}
			baseKnown = err == nil
			tl.setBase(int(tr.Run.Tokens))
			baseCalls = tr.Run.Calls
			tl.began = tr.Run.Started
		}
		tl.line(runLine(st, tr))
		c.runID = tr.Run.ID
	}
	observe := research.Observe(func(a research.Activity) {
		tl.observe(a)
		if a.Usage != nil && tr != nil {
			spent, usage := tl.spent()
			tr.Run.Cost = nil
			if baseKnown {
				tr.Run.Cost = app.CostUSD(baseUsage.Merge(usage), r.Models.Specs(), cfg.Prices)
			}
			tr.Progress(ctx, int64(spent), baseCalls+usage.Total().Calls)
		}
	})
	runOpts := []research.RunOption{observe}
	if tr != nil {
		// The run's searches and page reads are kept with it: a resume
		// serves them from the store.
		runOpts = append(runOpts, research.Journal(tr.Journal()))
	}
	rep, runErr := start(runCtx, runOpts...)
	reviewed := false
	// A review is answered by resuming from the store: not once the store
	// failed.
	for rep != nil && rep.Review != nil && errors.Is(runErr, graph.ErrInterrupted) && c.canAsk() && st.SaveFailure() == nil {
		reviewed = true
		ans, err := c.askReview(runCtx, rep.Review)
		if err != nil {
			if !errors.Is(err, errNoAnswer) {
				runErr = err
			}
			break
		}
		rep, runErr = r.Resume(runCtx, tr.Run.Thread, append(runOpts, research.RunID(tr.Run.ID), research.Answer(ans))...)
	}
	o := outcomeOf(ctx, runCtx, runErr)
	o.timeout = cfg.Timeout
	unsaved := st.SaveFailure()
	if unsaved != nil && o.status == runstore.StatusNeedsInput {
		// It cannot be resumed with the answer: it ends here.
		o.status = runstore.StatusFailed
	}
	c.console.stop()

	var doc []byte
	if rep != nil {
		if reviewed {
			// The report measured the last stretch only, after the
			// review: the run took this command's time, the waits for
			// the person included.
			rep.Timings.Total = tl.now().Sub(tl.start)
		}
		recordUsage(tr, rep.Usage, r.Models.Specs(), cfg.Prices)
		tl.summary(rep, runErr, app.CostText(rep.Usage, r.Models.Specs(), cfg.Prices))
		var err error
		if doc, err = app.PricedResearchDocument(tr.Ref(), rep, r.Models.Specs(), cfg.Prices, o.docErr(c, runErr)); err != nil {
			return err
		}
	}
	app.MeterRun(ctx, telemetry.RunKindResearch, o.status, usageOf(rep), r.Models.Specs(), cfg.Prices)
	status, why := o.status, o.why(c, runErr)
	if unsaved != nil {
		status = runstore.StatusFailed
		why = c.console.redact(oneLine("not kept: "+unsaved.Error(), 0))
		if runErr != nil {
			why = o.why(c, runErr) + "; " + why
		}
	}
	if err := tr.Finish(ctx, status, why, doc); err != nil && unsaved == nil {
		c.console.errorLine("warning: " + err.Error())
	}
	switch {
	case o.status == runstore.StatusNeedsInput && rep != nil && rep.Review != nil:
		c.pausedForReview(tr.Run.ID, rep.Review)
		if cfg.Format == config.FormatJSON {
			// For scripts: the run's id to resume it with, marked
			// incomplete ("waits for an answer").
			if err := c.output(string(doc) + "\n"); err != nil {
				return err
			}
		}
	case rep != nil && (runErr == nil || o.status == runstore.StatusInterrupted || rep.Answer != "" || cfg.Format == config.FormatJSON):
		// A failed run's JSON document still goes out: incomplete, with
		// its error, for the scripts that read it.
		if err := c.writeReport(cfg, rep, doc); err != nil {
			return err
		}
	}
	if err := o.exit(runErr); err != nil {
		if unsaved != nil {
			c.console.errorLine("warning: " + notKept(tr, unsaved).Error())
		}
		return err
	}
	if unsaved != nil {
		return &exitError{code: exitStore, err: notKept(tr, unsaved)}
	}
	return uncited(rep)
}

// notKept says that the run driven was not kept because the store failed
// (unsaved) while it ran.
func notKept(tr *app.Tracker, unsaved error) error {
	return fmt.Errorf("run %s was not kept: the run store failed while saving it, so research resume cannot continue it from where it ended: %w", tr.Run.ID, unsaved)
}

// uncited is the error of a finished run whose answer cites no source
// (exit 7): nothing it gathered supports the answer printed above.
func uncited(rep *research.Report) error {
	if rep == nil || len(rep.Sources) > 0 || rep.Incomplete || rep.Review != nil {
		return nil
	}
	why := "nothing was gathered (the searches found nothing, or the review stopped the research before any search)"
	if rep.Gathered > 0 {
		why = fmt.Sprintf("it cites none of the %s gathered", plural(rep.Gathered, "source", "sources"))
	}
	return &exitError{code: exitNoSources, err: fmt.Errorf("the answer above cites no source: %s; do not rely on it, or research again with other words or a wider --search", why)}
}

// outcome is how a run ended, for its record and the exit status.
type outcome struct {
	status      runstore.Status
	interrupted bool // Ctrl-C or SIGTERM
	timedOut    bool
	timeout     time.Duration
}

func outcomeOf(ctx, runCtx context.Context, runErr error) outcome {
	o := outcome{interrupted: context.Cause(ctx) == errInterrupted}
	o.timedOut = !o.interrupted && context.Cause(runCtx) == errRunTimeout
	switch {
	case o.interrupted, o.timedOut:
		o.status = runstore.StatusInterrupted
	case errors.Is(runErr, graph.ErrInterrupted):
		o.status = runstore.StatusNeedsInput
	case runErr != nil:
		o.status = runstore.StatusFailed
	default:
		o.status = runstore.StatusDone
	}
	return o
}

// why is the reason recorded with the run.
func (o outcome) why(c *cli, runErr error) string {
	switch {
	case o.interrupted:
		return "interrupted"
	case o.timedOut:
		return fmt.Sprintf("timed out after %s", o.timeout)
	case o.status == runstore.StatusNeedsInput:
		return "waits for an answer"
	case runErr != nil:
		return c.console.redact(strings.Join(errorLines(runErr, false), "; "))
	}
	return ""
}

// docErr is the error the JSON report carries.
func (o outcome) docErr(c *cli, runErr error) error {
	if runErr == nil {
		return nil
	}
	return errors.New(o.why(c, runErr))
}

// exit turns the outcome into the command's result.
func (o outcome) exit(runErr error) error {
	switch {
	case o.interrupted:
		return &exitError{code: exitInterrupted, err: errInterrupted}
	case o.timedOut:
		return fmt.Errorf("the run did not finish within the timeout of %s (timeout); the report above is incomplete", o.timeout)
	case o.status == runstore.StatusNeedsInput:
		return &exitError{code: exitNeedsInput}
	}
	return runErr
}

// writeReport writes the report in the configured format; doc is its JSON
// document.
func (c *cli) writeReport(cfg *config.Config, rep *research.Report, doc []byte) error {
	if cfg.Format == config.FormatJSON {
		return c.output(string(doc) + "\n")
	}
	return c.outputMarkdown(rep.Markdown())
}
