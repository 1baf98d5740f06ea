package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/llm/providers"
	"github.com/deepgraph/deepgraph/research"
)

// errRunTimeout is the cancellation cause of --timeout.
var errRunTimeout = errors.New("run timeout")

func howToConfigure() string { return providers.HowToConfigure() }

func (c *cli) runResearch(cmd *cobra.Command, args []string) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	question, err := c.question(args)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)
	c.console.start("preparing")

	r, err := app.NewResearch(ctx, cfg, logger)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return err
	}
	defer r.Close()
	logger.Debug("models", "query", r.Models.Spec("query"), "research", r.Models.Spec("research"),
		"reflection", r.Models.Spec("reflection"), "answer", r.Models.Spec("answer"), "backend", r.Backend.Plan.Why)

	runCtx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, cfg.Timeout, errRunTimeout)
		defer cancel()
	}
	tl := newTimeline(c.console, time.Now())
	tl.header(r.Backend.Plan, r.Models)
	rep, runErr := r.Run(runCtx, question, research.Observe(tl.observe))
	interrupted := context.Cause(ctx) == errInterrupted
	timedOut := !interrupted && context.Cause(runCtx) == errRunTimeout
	c.console.stop()

	if rep != nil {
		tl.summary(rep, runErr)
		docErr := runErr
		switch {
		case interrupted:
			docErr = errors.New("interrupted")
		case timedOut:
			docErr = fmt.Errorf("timed out after %s", cfg.Timeout)
		case runErr != nil:
			docErr = errors.New(c.console.redact(strings.Join(errorLines(runErr, false), "; ")))
		}
		if runErr == nil || interrupted || timedOut || rep.Answer != "" {
			if err := c.writeReport(cfg, rep, r.Models, docErr); err != nil {
				return err
			}
		}
	}
	switch {
	case interrupted:
		return &exitError{code: exitInterrupted, err: errInterrupted}
	case timedOut:
		return fmt.Errorf("the run did not finish within the timeout of %s (timeout); the report above is incomplete", cfg.Timeout)
	case runErr != nil:
		return runErr
	}
	return nil
}

// writeReport writes the report in the configured format.
func (c *cli) writeReport(cfg *config.Config, rep *research.Report, models *app.Models, runErr error) error {
	switch cfg.Format {
	case config.FormatJSON:
		doc, err := jsonDocument(rep, models.Specs(), runErr)
		if err != nil {
			return err
		}
		return c.output(string(doc) + "\n")
	default:
		return c.output(cleanText(rep.Markdown()))
	}
}
