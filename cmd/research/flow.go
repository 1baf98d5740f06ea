package main

import (
	"context"
	"encoding/json"
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
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

func (c *cli) flowCmd() *cobra.Command {
	var out string
	var fo app.FlowOptions
	cmd := &cobra.Command{
		Use:   "flow [flags] \"task\"",
		Short: "Plan a task, run each step on the right executor (agent or researcher), and summarise with sources",
		Long: `flow runs a planning flow: the model writes a plan of steps, each tagged
with the executor that suits it; each step runs on its own — the agent (the
tools of research agent, with a fresh step budget per step) or the
researcher (a deep-research run on the step's question) — and sees the
plan and the earlier steps' results. A step that fails or runs out of its
steps, or an agent step that asks for a file the workspace does not hold
when the agent says it is done (see "done means done" in research agent
--help), is marked blocked, never completed, and the planner revises the rest
of the plan (at most --max-revisions times). A last call summarises what
was done and what was not; its citations are checked against the sources
the steps gathered, and it ends with a numbered Sources list.

The plan, each step with its executor and status, and the executors' own
steps are shown on stderr; the summary goes to stdout (or --out), or the
whole result as JSON with --format json.

--approve-plan shows the plan and waits: press Enter to approve it, type
"no" (and a reason) to stop, or type new steps separated by ';' to replace
the steps not yet done. Without a terminal (or with --no-input) the run
pauses in the store and exits 6: answer it with research resume ID --answer
approve (or "no: REASON", or new steps separated by ';').

The agent's flags apply to the agent executor. With --approve-tools an
agent step's tool call with side effects pauses the flow until it is
approved: on the terminal ("approve", "reject: REASON" or "edit: {JSON
arguments}"), or, without one, with research resume ID --answer approve.

The flow is kept in the run store (research runs lists it, research show ID
prints its summary): a flow that stopped — killed, Ctrl-C, timed out, failed,
waiting for its plan to be approved — continues with research resume ID,
without running its finished steps again (the step that was running when it
stopped is taken up again). --no-save keeps nothing.

Exit status: 0 every step completed; 1 the run failed; 2 configuration or
usage error; 3 some steps were blocked or the plan was rejected (the summary
says what was not done); 6 the plan or a tool call waits for approval
(research resume); 130 interrupted.`,
		Example: `  research flow "Research the Go 1.22 loop change and write notes.md" --workspace ./notes
  research flow --approve-plan --mcp files "Tidy the notes in my MCP file server"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.out = out
			return c.runFlow(cmd, args, fo)
		},
	}
	if err := config.AddFlags(cmd.Flags(), config.KeysWithFlags("agent.")...); err != nil {
		panic(err)
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the summary to FILE instead of stdout")
	cmd.Flags().BoolVar(&fo.Approve, "approve-plan", false, "show the plan and wait for it to be approved or edited before any step runs (and after each revision)")
	cmd.Flags().IntVar(&fo.MaxPlanSteps, "max-plan-steps", nodes.DefaultMaxPlanSteps, "most steps of a plan")
	cmd.Flags().IntVar(&fo.MaxRevisions, "max-revisions", nodes.DefaultMaxRevisions, "most revisions of the plan after blocked steps (0: none)")
	return cmd
}

func (c *cli) runFlow(cmd *cobra.Command, args []string, fo app.FlowOptions) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	task, err := c.question(args, "no task: run research flow \"your task\" (or pipe it in)")
	if err != nil {
		return err
	}
	if err := checkOut(c.out); err != nil {
		return err
	}
	switch {
	case fo.MaxPlanSteps < 1 || fo.MaxPlanSteps > 50:
		return usageErr("--max-plan-steps %d is out of range: use 1 to 50", fo.MaxPlanSteps)
	case fo.MaxRevisions < 0 || fo.MaxRevisions > 10:
		return usageErr("--max-revisions %d is out of range: use 0 to 10", fo.MaxRevisions)
	case fo.Approve && c.noSave && !c.canAsk():
		return usageErr("--approve-plan asks on the terminal or pauses the run in the store, but stdin is not a terminal (or --no-input is set) and --no-save keeps no run: run it in a terminal, drop --no-save, or drop --approve-plan")
	}
	if fo.MaxRevisions == 0 {
		fo.MaxRevisions = -1 // nodes.FlowConfig: negative is none
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)
	st, err := c.openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if fo.Approve && st == nil && !c.canAsk() {
		return usageErr("--approve-plan asks on the terminal or pauses the run in the store, but stdin is not a terminal (or --no-input is set) and the store is off: run it in a terminal, set a store, or drop --approve-plan")
	}
	// With the store, each step of the flow is kept: a flow that stops
	// (killed, Ctrl-C, a timeout, a plan to approve) is resumed with
	// research resume without running its finished steps again.
	fo.Checkpointer = checkpointer(st)
	if (fo.Approve || cfg.Agent.ApproveTools) && fo.Checkpointer == nil && c.canAsk() {
		// Asked on the terminal, without the store: the run pauses in
		// memory.
		fo.Checkpointer = graph.NewMemorySaver()
	}
	setup, err := app.NewFlow(ctx, cfg, app.AgentIO{Logger: logger}, fo)
	if err != nil {
		return err
	}
	defer setup.Close()
	var tr *app.Tracker
	var opts []graph.RunOption
	switch {
	case st != nil:
		if tr, err = st.Begin(ctx, runstore.KindFlow, task, "", app.FlowSettings(cfg, setup, fo), logger); err != nil {
			return err
		}
		opts = append(opts, graph.Thread(tr.Run.Thread), graph.RunID(tr.Run.ID))
	case fo.Checkpointer != nil:
		opts = append(opts, graph.Thread("flow"))
	}
	started := false
	return c.driveFlow(ctx, cfg, setup, st, tr, func(ctx context.Context, observe func(nodes.FlowEvent), more ...graph.RunOption) (*nodes.FlowResult, error) {
		if started {
			// An answer given on the terminal continues the run where it
			// paused.
			return setup.Flow.Resume(ctx, observe, append(opts, more...)...)
		}
		started = true
		return setup.Flow.Run(ctx, task, observe, append(opts, more...)...)
	})
}

// resumeFlow continues the flow run of tr with setup, giving it answer
// when the run waits for one: a PlanApproval for a plan review, the text
// for an agent step's question or tool approval (see flowAnswer).
func (c *cli) resumeFlow(ctx context.Context, cfg *config.Config, setup *app.FlowSetup, st *app.Store, tr *app.Tracker, answer any) error {
	opts := []graph.RunOption{graph.Thread(tr.Run.Thread), graph.RunID(tr.Run.ID)}
	if answer != nil {
		opts = append(opts, graph.Answer(answer))
	}
	return c.driveFlow(ctx, cfg, setup, st, tr, func(ctx context.Context, observe func(nodes.FlowEvent), more ...graph.RunOption) (*nodes.FlowResult, error) {
		return setup.Flow.Resume(ctx, observe, append(opts, more...)...)
	})
}

// flowAnswer reads answer (research resume --answer) for what the stored
// flow run on thread waits on: a plan review takes a PlanApproval, an
// agent step's question or tool approval the text; nil for no answer.
func flowAnswer(ctx context.Context, st *app.Store, thread, answer string) (any, error) {
	if answer == "" {
		return nil, nil
	}
	saved, err := app.SavedFlow(ctx, st.Checkpointer, thread)
	if err != nil {
		return nil, err
	}
	if saved.Waiting != nil {
		return app.ParsePlanAnswer(answer), nil
	}
	return answer, nil
}

// driveFlow runs (or resumes) a flow with its progress lines, asks for
// plan approvals on the terminal, records the outcome in the store and
// prints the summary — or, for a flow that stopped, what it had done.
func (c *cli) driveFlow(ctx context.Context, cfg *config.Config, setup *app.FlowSetup, st *app.Store, tr *app.Tracker,
	start func(context.Context, func(nodes.FlowEvent), ...graph.RunOption) (*nodes.FlowResult, error)) error {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.Timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, cfg.Timeout, errRunTimeout)
	}
	defer cancel()

	began := time.Now()
	ag := setup.Agent
	ws := ag.Workspace
	if ag.TempWorkspace {
		ws += " (new; kept after the run)"
	}
	c.console.line(fmt.Sprintf("Flow using %s in workspace %s", ag.Spec, ws))
	c.console.line("Executors: " + strings.Join(setup.Executors, ", ") + " · agent tools: " + strings.Join(ag.Tools.Names(), ", "))
	if m := ag.MCP.Summary(); m != "" {
		c.console.line("MCP servers: " + m)
	}
	if b := ag.BrowserNote(); b != "" {
		c.console.line(b)
	}
	if app.HasExec(ag.Tools) {
		c.execWarning()
	}
	if tr != nil {
		c.console.line(runLine(st, tr))
		c.runID = tr.Run.ID
	}
	if tr != nil {
		// The agent steps' tool calls with side effects are recorded in
		// the run's record before and after they run: a resumed flow does
		// not repeat them blindly.
		runCtx = nodes.WithCallJournal(runCtx, tr.Journal())
	}
	c.console.start("planning")
	view := &flowView{c: c.console, start: began}
	res, runErr := start(runCtx, view.observe)
	for res != nil && waits(res) && errors.Is(runErr, graph.ErrInterrupted) && c.canAsk() {
		var ans any
		var err error
		switch {
		case res.Waiting != nil:
			ans, err = c.askPlan(runCtx, res.Waiting)
		case res.Approval != nil:
			ans, err = c.ask(runCtx, "approve a tool call", res.Question.Question)
		default:
			ans, err = c.ask(runCtx, "question from the agent", res.Question.Question)
		}
		if err != nil {
			if !errors.Is(err, errNoAnswer) || tr == nil {
				runErr = err
			}
			break
		}
		res, runErr = start(runCtx, view.observe, graph.Answer(ans))
	}
	c.console.stop()
	o := outcomeOf(ctx, runCtx, runErr)
	o.timeout = cfg.Timeout
	meterFlow(ctx, o, runErr, res, setup.Specs(), cfg)
	paused := o.status == runstore.StatusNeedsInput && res != nil && waits(res) && tr != nil
	var doc []byte
	if res != nil {
		recordUsage(tr, res.Usage, setup.Specs(), cfg.Prices)
		if runErr != nil && !paused {
			res.Incomplete = true
		}
		d := flowDoc{FlowResult: res}
		if runErr != nil && !paused {
			d.Error = o.why(c, runErr)
		}
		doc, _ = json.MarshalIndent(d, "", "  ")
	}
	if err := tr.Finish(ctx, o.status, o.why(c, runErr), doc); err != nil {
		c.console.errorLine("warning: " + err.Error())
	}
	if runErr != nil && res != nil && !waits(res) {
		// What the stopped flow had done, so it is not lost: its JSON
		// document (incomplete, with its error), or its finished steps.
		if err := c.writeFlowPartial(cfg, res, doc); err != nil {
			c.console.errorLine("warning: " + err.Error())
		}
	}
	switch {
	case o.interrupted:
		return &exitError{code: exitInterrupted, err: errInterrupted}
	case o.timedOut:
		return &exitError{code: exitFailed, err: fmt.Errorf("the flow did not finish within the timeout of %s (timeout); what its finished steps found is above", cfg.Timeout)}
	case paused && res.Waiting != nil:
		c.pausedForPlan(tr.Run.ID, res.Waiting)
		return &exitError{code: exitNeedsInput}
	case paused:
		c.pausedForQuestion(tr.Run.ID, &nodes.AgentResult{Waiting: res.Question, Approval: res.Approval})
		return &exitError{code: exitNeedsInput}
	case errors.Is(runErr, errNoAnswer):
		return &exitError{code: exitNeedsInput, err: errors.New("the plan was not approved: the input ended")}
	case runErr != nil:
		return runErr
	}
	tot := res.Usage.Total()
	done, total := res.Plan.Progress()
	c.console.line(fmt.Sprintf("Finished: %s in %.1fs · %d/%d steps completed · %s · %s tokens · %s · %s cited", res.Status,
		time.Since(began).Seconds(), done, total, plural(res.Revisions, "revision", "revisions"), thousands(tokens(tot.Usage)),
		plural(tot.Calls, "LLM call", "LLM calls"), plural(len(res.Sources), "source", "sources")))
	if res.Dropped > 0 {
		c.console.line(fmt.Sprintf("Removed %s that named no source gathered in this run", plural(res.Dropped, "citation", "citations")))
	}
	if err := c.writeFlowResult(cfg, res, doc); err != nil {
		return err
	}
	if !res.Status.OK() {
		return &exitError{code: exitAgentFailed, err: fmt.Errorf("the flow ended %s: %s; the summary above says what was not done", res.Status, flowShortfall(res))}
	}
	return nil
}

// waits reports whether a paused flow waits for an answer: a plan review,
// or an agent step's question or tool approval.
func waits(res *nodes.FlowResult) bool { return res.Waiting != nil || res.Question != nil }

// writeFlowResult prints a finished flow's summary, or its JSON document.
func (c *cli) writeFlowResult(cfg *config.Config, res *nodes.FlowResult, doc []byte) error {
	if cfg.Format == config.FormatJSON {
		return c.output(string(doc) + "\n")
	}
	return c.outputMarkdown(res.Summary)
}

// pausedForPlan says how to continue a flow that waits for its plan to be
// approved.
func (c *cli) pausedForPlan(id string, r *nodes.PlanReview) {
	c.console.plain(fmt.Sprintf("Paused: run %s waits for the approval of its plan:\n%s\n", id, r.Plan.String()))
	c.console.plain(fmt.Sprintf("Continue it with: research resume %s --answer approve   (or \"no: REASON\", or new steps separated by \";\")\n", id))
}

// flowDoc is a flow's JSON document: its result, and the error of a run
// that stopped.
type flowDoc struct {
	*nodes.FlowResult
	Error string `json:"error,omitempty"`
}

// writeFlowPartial prints what a stopped flow had done: its JSON document
// (doc) with --format json, else its finished steps' results (nothing when
// no step had finished).
func (c *cli) writeFlowPartial(cfg *config.Config, res *nodes.FlowResult, doc []byte) error {
	if cfg.Format == config.FormatJSON {
		return c.output(string(doc) + "\n")
	}
	if res.Partial == "" {
		return nil
	}
	return c.outputMarkdown(res.Partial)
}

// meterFlow records the flow's end in the metrics (app.MeterRun, kind
// flow). Its status is the run's, as for research and agent runs: done
// when the flow finished — completed, partial and rejected alike, since
// the flow ran to its summary and the result says what was not done (as
// an agent run that ran out of steps is done) — failed, interrupted
// (also on the timeout), and needs-input when --approve-plan got no
// answer (exit 6).
func meterFlow(ctx context.Context, o outcome, runErr error, res *nodes.FlowResult, specs map[string]string, cfg *config.Config) {
	status := o.status
	if errors.Is(runErr, errNoAnswer) && !o.interrupted && !o.timedOut {
		status = runstore.StatusNeedsInput
	}
	var usage llm.UsageByRole
	if res != nil {
		usage = res.Usage
	}
	app.MeterRun(ctx, telemetry.RunKindFlow, status, usage, specs, cfg.Prices)
}

// flowShortfall says in a few words what a flow did not do.
func flowShortfall(res *nodes.FlowResult) string {
	if res.Status == nodes.FlowRejected {
		return "the plan was rejected"
	}
	c := res.Plan.Counts()
	var parts []string
	if c.Blocked > 0 {
		parts = append(parts, plural(c.Blocked, "step", "steps")+" blocked")
	}
	if n := c.NotStarted + c.InProgress; n > 0 {
		parts = append(parts, plural(n, "step", "steps")+" not run")
	}
	return strings.Join(parts, ", ")
}

// askPlan shows the plan and reads the approval: Enter approves, "no
// [reason]" rejects, anything else is the new steps separated by ';'.
func (c *cli) askPlan(ctx context.Context, r *nodes.PlanReview) (nodes.PlanApproval, error) {
	heading := "plan to approve"
	if r.Revision > 0 {
		heading = fmt.Sprintf("revised plan (revision %d) to approve", r.Revision)
	}
	question := r.Plan.String() + "\nEnter approves it; \"no\" (and a reason) stops the flow; or type new steps for what is not done yet, separated by ';':"
	line, err := c.ask(ctx, heading, question)
	if err != nil {
		return nodes.PlanApproval{}, err
	}
	return app.ParsePlanAnswer(line), nil
}

// flowView shows a flow's progress on stderr.
type flowView struct {
	c     *console
	start time.Time
}

func (v *flowView) line(msg string) {
	v.c.line(fmt.Sprintf("[%5.1fs] %s", time.Since(v.start).Seconds(), msg))
}

func (v *flowView) observe(ev nodes.FlowEvent) {
	switch ev.Kind {
	case nodes.FlowEventPlan, nodes.FlowEventRevised:
		what := "Plan"
		if ev.Kind == nodes.FlowEventRevised {
			what = fmt.Sprintf("Revised plan (revision %d)", ev.Revision)
		}
		if ev.Plan != nil {
			v.line(fmt.Sprintf("%s: %s", what, app.OneLine(ev.Plan.Title, 120)))
			for i, s := range ev.Plan.Steps {
				v.c.line(fmt.Sprintf("         %d. %s %s", i, s.Status.Mark(), app.OneLine(s.Text, 200)))
			}
		}
		if ev.Note != "" {
			v.line("  note: " + ev.Note)
		}
	case nodes.FlowEventApproved:
		if ev.Note == "edited" && ev.Plan != nil {
			v.line("Plan approved as edited:")
			for i, s := range ev.Plan.Steps {
				v.c.line(fmt.Sprintf("         %d. %s %s", i, s.Status.Mark(), app.OneLine(s.Text, 200)))
			}
		} else {
			v.line("Plan approved")
		}
	case nodes.FlowEventStepStart:
		v.line(fmt.Sprintf("Step %d [%s] %s: in progress", ev.Step, ev.Executor, app.OneLine(ev.Text, 160)))
		if ev.Note != "" {
			v.line("  note: " + ev.Note)
		}
		v.c.setStatus(fmt.Sprintf("step %d: %s", ev.Step, ev.Executor))
	case nodes.FlowEventStepDone:
		if ev.Status == tools.StepBlocked {
			v.line(fmt.Sprintf("Step %d [%s]: blocked — %s", ev.Step, ev.Executor, app.OneLine(ev.Reason, 200)))
		} else {
			v.line(fmt.Sprintf("Step %d [%s]: completed — %s", ev.Step, ev.Executor, app.OneLine(ev.Output, 160)))
		}
		v.c.setStatus("planning")
	case nodes.FlowEventExecutor:
		switch e := ev.Event.(type) {
		case nodes.AgentEvent:
			if e.Kind == nodes.AgentEventDone {
				return // the step's own line follows
			}
			for _, l := range app.AgentLines(e) {
				v.line("  │ " + l)
			}
		case research.Activity:
			if l := app.ActivityLine(e); l != "" {
				v.line("  │ " + l)
			}
		}
	case nodes.FlowEventDone:
		v.line("Summary written")
	}
}

// showFlow prints a stored flow run's summary — or, for a flow that
// stopped before its summary, what its finished steps found, read from its
// checkpoints — or its JSON document.
func (c *cli) showFlow(ctx context.Context, cfg *config.Config, st *app.Store, run *runstore.Run) error {
	var res *nodes.FlowResult
	if len(run.Report) > 0 {
		if cfg.Format == config.FormatJSON {
			return c.output(string(run.Report) + "\n")
		}
		var doc flowDoc
		if err := json.Unmarshal(run.Report, &doc); err != nil {
			return fmt.Errorf("run %s: its stored result cannot be read: %w", run.ID, err)
		}
		res = doc.FlowResult
	}
	if res == nil || (res.Summary == "" && res.Partial == "") {
		// Killed, or paused: what its finished steps found, from its
		// checkpoints.
		var err error
		if res, err = app.SavedFlow(ctx, st.Checkpointer, run.Thread); err != nil {
			return fmt.Errorf("run %s: %w", run.ID, err)
		}
		if cfg.Format == config.FormatJSON {
			doc, err := json.MarshalIndent(flowDoc{FlowResult: res, Error: orText(run.Error, string(run.Effective(time.Now(), runstore.Alive)))}, "", "  ")
			if err != nil {
				return err
			}
			return c.output(string(doc) + "\n")
		}
	}
	if res == nil || (res.Summary == "" && res.Partial == "") {
		return usageErr("run %s has no summary stored and no finished step (it is %s); research resume %s continues it", run.ID, run.Effective(time.Now(), runstore.Alive), run.ID)
	}
	if res.Summary != "" {
		return c.outputMarkdown(res.Summary)
	}
	return c.outputMarkdown(res.Partial)
}
