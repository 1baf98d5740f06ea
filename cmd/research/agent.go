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
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

func (c *cli) agentCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "agent [flags] \"task\"",
		Short: "Run the ReAct agent on a task with tools (search, pages, files; code only with --allow-exec)",
		Long: `agent runs a ReAct agent: it thinks with the model, calls tools, observes the
results, and repeats until it calls terminate with its answer. Each step is
shown on stderr; the final answer goes to stdout (or --out).

Tools: web_search (when a search provider or --corpus is configured),
fetch_page (public addresses only unless --allow-private-urls),
str_replace_editor (confined to the workspace), planning, ask_human (when
stdin is a terminal), terminate — and python_execute and bash only with
--allow-exec, browser (a headless Chromium: pages that need JavaScript,
forms, clicks, tabs) only with --browser. --tools narrows the set (MCP
tools as server.tool, or server.* for all of a server's) and --deny-tools
removes tools (names or patterns); a step never offers the model more than
128 tools (OpenAI's limit) — it fails naming the limit instead.

Side effects: bash, python_execute, the editor's writes (create,
str_replace, insert, undo_edit) and MCP tools not annotated read-only may
change things. With --approve-tools each such call waits for you before it
runs: answer "approve", "reject: REASON" (the agent is told why) or "edit:
{JSON arguments}" on the terminal, or later with research resume ID
--answer, or over HTTP (research serve). It needs the run store (not
--no-save). Each such call is also recorded in the run's record before it
runs and when it ends: when a run killed during one is resumed, the call is
not run again blindly — the agent is told its outcome is unknown (with the
file's current content for an editor write), or, with --approve-tools, you
are asked. Read-only calls (searches, page reads, views) may run again.

With --browser, the model sees the browser's state before each step (the
URL, the tabs, the page's interactive elements numbered for its actions,
the text around the viewport). Every request of the browser passes the SSRF
guard of fetch_page; downloads, uploads, notifications, location, camera
and microphone are refused; each run gets a fresh profile in a temporary
directory, removed after, and the browser dies with the run (timeout,
Ctrl-C, or this process killed). See docs/browser.md.

The workspace is --workspace DIR (it must exist; file-system roots, system
directories such as /etc or /usr, and your home directory itself are
refused), or else a new temporary directory, which is kept after the run and
printed. SECURITY: python_execute and bash run model-written code as you,
with your files and network. They run in the workspace with a scrubbed
environment, and nothing a call starts outlives it: on Linux each call runs
in a PID namespace of its own (with a user namespace when you are not
root), which the kernel kills whole when the call ends or the agent dies,
even by SIGKILL; where namespaces are not permitted, its process group is
killed and the agent adopts and kills the processes it orphaned (which a
SIGKILL of the agent leaves running). The agent says at the start which
applies. They are NOT a sandbox: use them in a container or VM for
untrusted tasks.

Done means done: when the task names files to make ("write notes.md",
"create a file with ...") or the answer says it wrote one, the agent's "done"
is checked: it is shown the workspace listing (names and sizes) and what is
missing or empty, and asked to confirm or continue (at most 2 such turns); a
reply in text is no success while a named file is missing, and the run then
fails (exit status 1) saying which file.

--timeout bounds the whole run (the model is asked, without tools and on a
short budget of its own, for a best-effort answer from what it gathered,
with its sources, printed and kept as incomplete — or else what the agent had
done is printed — and the exit status is 1); --tool-timeout bounds each tool
call (the model is told the call did not finish), except ask_human and
deep_research, which only --timeout bounds: a person takes the time they
take, and a research run takes minutes by design (rounds of searches, page
reads and model calls, each with its own timeouts), which --tool-timeout
would cut short. --format json prints the run's JSON document instead of
the answer, also when the run fails (incomplete, with its error).

Exit status: 0 the task is done; 1 the run failed or timed out; 2
configuration or usage error; 3 the agent gave up (terminate with failure); 4
the step limit was reached (a best-effort answer is printed); 5 the agent was
stuck repeating itself; 130 interrupted.`,
		Example: `  research agent "Summarise the three latest Go releases into notes.md" --workspace ./notes
  research agent --allow-exec --tools str_replace_editor,python_execute,terminate "Plot …"
  research agent --allow-exec --approve-tools "Clean up the build scripts in this repo" --workspace ./repo
  research agent --browser "Find the cheapest direct flight on example-airline.com next Friday"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.out = out
			return c.runAgent(cmd, args)
		},
	}
	if err := config.AddFlags(cmd.Flags(), config.KeysWithFlags("agent.")...); err != nil {
		panic(err)
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the final answer to FILE instead of stdout")
	return cmd
}

func (c *cli) runAgent(cmd *cobra.Command, args []string) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	task, err := c.question(args, "no task: run research agent \"your task\" (or pipe it in)")
	if err != nil {
		return err
	}
	if err := checkOut(c.out); err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)
	st, err := c.openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	setup, err := c.agentSetup(ctx, cfg, st)
	if err != nil {
		return err
	}
	defer setup.Close()
	var tr *app.Tracker
	var opts []graph.RunOption
	if st != nil {
		if tr, err = st.Begin(ctx, runstore.KindAgent, task, "", app.AgentSettings(cfg, setup.Spec, setup.Workspace), logger); err != nil {
			return err
		}
		opts = append(opts, graph.Thread(tr.Run.Thread), graph.RunID(tr.Run.ID))
	}
	started := false
	return c.driveAgent(ctx, cfg, setup, st, tr, func(ctx context.Context, observe func(nodes.AgentEvent), more ...graph.RunOption) (*nodes.AgentResult, error) {
		if started {
			// An answer given on the terminal continues the stored run
			// where it paused: the ask_human node takes the answer, then
			// the step's other calls run. (Run would start the graph
			// again from its input, leaving the paused step's calls
			// without results.)
			return setup.Agent.Resume(ctx, observe, append(opts, more...)...)
		}
		started = true
		return setup.Agent.Run(ctx, task, observe, append(opts, more...)...)
	})
}

// agentSetup builds the agent; with a store, its runs are kept and
// ask_human pauses them (answered on the terminal by driveAgent, or later
// with research resume --answer).
func (c *cli) agentSetup(ctx context.Context, cfg *config.Config, st *app.Store) (*app.AgentSetup, error) {
	aio := app.AgentIO{Logger: c.logger(), Checkpointer: checkpointer(st)}
	if st == nil && c.stdinTTY && !c.noInput {
		aio.Human = &pausingAsker{inner: c.terminal(), c: c.console}
	}
	return app.NewAgent(ctx, cfg, aio)
}

// resumeAgent continues the agent run of tr with setup, giving it answer
// when the run waits for one.
func (c *cli) resumeAgent(ctx context.Context, cfg *config.Config, setup *app.AgentSetup, st *app.Store, tr *app.Tracker, answer string) error {
	opts := []graph.RunOption{graph.Thread(tr.Run.Thread), graph.RunID(tr.Run.ID)}
	if answer != "" {
		opts = append(opts, graph.Answer(answer))
	}
	return c.driveAgent(ctx, cfg, setup, st, tr, func(ctx context.Context, observe func(nodes.AgentEvent), more ...graph.RunOption) (*nodes.AgentResult, error) {
		return setup.Agent.Resume(ctx, observe, append(opts, more...)...)
	})
}

// driveAgent runs (or resumes) an agent run with its step lines, answers
// its questions on the terminal, records the outcome and prints the answer.
func (c *cli) driveAgent(ctx context.Context, cfg *config.Config, setup *app.AgentSetup, st *app.Store, tr *app.Tracker,
	start func(context.Context, func(nodes.AgentEvent), ...graph.RunOption) (*nodes.AgentResult, error)) error {
	began := time.Now()
	runCtx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, cfg.Timeout, errRunTimeout)
		defer cancel()
	}
	ws := setup.Workspace
	if setup.TempWorkspace {
		ws += " (new; kept after the run)"
	}
	c.console.line(fmt.Sprintf("Agent using %s in workspace %s", setup.Spec, ws))
	c.console.line("Tools: " + strings.Join(setup.Tools.Names(), ", "))
	if m := setup.MCP.Summary(); m != "" {
		c.console.line("MCP servers: " + m)
	}
	if b := setup.BrowserNote(); b != "" {
		c.console.line(b)
	}
	if app.HasExec(setup.Tools) {
		c.execWarning()
	}
	if tr != nil {
		c.console.line(runLine(st, tr))
		c.runID = tr.Run.ID
	}
	c.console.start("thinking")
	steps := &agentSteps{c: c.console, start: began, meter: setup.Meter}
	c.console.setStamp(steps.stamp)
	if tr != nil {
		baseTokens, baseCalls := tr.Run.Tokens, tr.Run.Calls
		steps.base = int(baseTokens)
		steps.progress = func(spent llm.Tally) {
			tr.Progress(ctx, baseTokens+int64(tokens(spent.Usage)), baseCalls+spent.Calls)
		}
	}
	if tr != nil {
		// Tool calls with side effects are recorded in the run's record
		// before and after they run: a resumed run does not repeat them
		// blindly.
		runCtx = nodes.WithCallJournal(runCtx, tr.Journal())
	}
	res, runErr := start(runCtx, steps.observe)
	for res != nil && res.Waiting != nil && errors.Is(runErr, graph.ErrInterrupted) && c.canAsk() {
		heading := "question from the agent"
		if res.Approval != nil {
			heading = "approve a tool call"
		}
		line, err := c.ask(runCtx, heading, res.Waiting.Question)
		if err != nil {
			if !errors.Is(err, errNoAnswer) {
				runErr = err
			}
			break
		}
		res, runErr = start(runCtx, steps.observe, graph.Answer(line))
	}
	c.console.stop()
	o := outcomeOf(ctx, runCtx, runErr)
	o.timeout = cfg.Timeout
	why := o.why(c, runErr)
	if o.status == runstore.StatusDone && res != nil {
		// An agent that gave up, ran out of steps or got stuck did not do
		// its task: its run is kept as failed, with its best effort.
		o.status, why = app.AgentOutcome(res, cfg.Agent.MaxSteps)
	}
	var doc []byte
	if res != nil {
		recordUsage(tr, res.Usage, map[string]string{llm.RoleAgent: setup.Spec}, cfg.Prices)
		doc, _ = json.MarshalIndent(app.PricedAgentResultDoc(tr.Ref(), res, setup.Spec, cfg.Prices, o.docErr(c, runErr)), "", "  ")
	}
	var usage llm.UsageByRole
	if res != nil {
		usage = res.Usage
	}
	app.MeterRun(ctx, telemetry.RunKindAgent, o.status, usage, map[string]string{llm.RoleAgent: setup.Spec}, cfg.Prices)
	if err := tr.Finish(ctx, o.status, why, doc); err != nil {
		c.console.errorLine("warning: " + err.Error())
	}
	paused := o.status == runstore.StatusNeedsInput && res != nil && res.Waiting != nil
	if runErr != nil && res != nil && !paused {
		// What the stopped run had done, so it is not lost: its JSON
		// document (incomplete, with its error), its best-effort answer
		// (a timed-out run), or its partial answer.
		var err error
		switch {
		case cfg.Format == config.FormatJSON:
			err = c.output(string(doc) + "\n")
		case res.BestEffort && res.Answer != "":
			err = c.output(strings.TrimRight(cleanText(res.Answer), "\n") + "\n")
		case res.Partial != "":
			err = c.output(strings.TrimRight(cleanText(res.Partial), "\n") + "\n")
		}
		if err != nil {
			c.console.errorLine("warning: " + err.Error())
		}
	}
	switch {
	case o.interrupted:
		return &exitError{code: exitInterrupted, err: errInterrupted}
	case o.timedOut:
		return &exitError{code: exitFailed, err: fmt.Errorf("the agent did not finish within the timeout of %s (timeout); what it had done is above", cfg.Timeout)}
	case paused:
		c.pausedForQuestion(tr.Run.ID, res)
		return &exitError{code: exitNeedsInput}
	case runErr != nil:
		return runErr
	}
	tot := res.Usage.Total()
	toks := thousands(tokens(tot.Usage))
	if c := cachedText(tot.Usage); c != "" {
		toks += " (" + c + ")"
	}
	c.console.line(fmt.Sprintf("Finished: %s in %.1fs · %s · %s tokens · %s · %s", res.Status, time.Since(began).Seconds(),
		plural(res.Steps, "step", "steps"), toks, plural(tot.Calls, "LLM call", "LLM calls"),
		app.CostText(res.Usage, map[string]string{llm.RoleAgent: setup.Spec}, cfg.Prices)))
	if err := c.writeAgentAnswer(cfg, res, doc); err != nil {
		return err
	}
	return agentExit(res.Status, why)
}

func (c *cli) writeAgentAnswer(cfg *config.Config, res *nodes.AgentResult, doc []byte) error {
	if cfg.Format == config.FormatJSON {
		return c.output(string(doc) + "\n")
	}
	return c.output(strings.TrimRight(cleanText(res.Answer), "\n") + "\n")
}

// agentExit is the exit status of a finished agent run with status, and
// why it is not done (app.AgentOutcome).
func agentExit(status nodes.AgentStatus, why string) error {
	code := exitFailed
	switch status {
	case nodes.AgentSuccess, nodes.AgentAnswered:
		return nil
	case nodes.AgentFailure:
		code = exitAgentFailed
	case nodes.AgentMaxSteps:
		code = exitAgentLimit
	case nodes.AgentStuck:
		code = exitAgentStuck
	}
	return &exitError{code: code, err: errors.New(why)}
}

// showAgent prints a stored agent run's answer.
func (c *cli) showAgent(cfg *config.Config, run *runstore.Run) error {
	if len(run.Report) == 0 {
		return usageErr("run %s has no answer stored (it is %s); research resume %s continues it", run.ID, run.Effective(time.Now(), runstore.Alive), run.ID)
	}
	if cfg.Format == config.FormatJSON {
		return c.output(string(run.Report) + "\n")
	}
	var doc app.AgentDoc
	if err := json.Unmarshal(run.Report, &doc); err != nil {
		return fmt.Errorf("run %s: its stored answer cannot be read: %w", run.ID, err)
	}
	return c.output(strings.TrimRight(doc.Answer, "\n") + "\n")
}

// pausingAsker stops the spinner while the human is asked, so it does not
// draw over the question and the answer being typed.
type pausingAsker struct {
	inner tools.Asker
	c     *console
}

func (p *pausingAsker) Ask(ctx context.Context, question string) (string, error) {
	p.c.stop()
	defer p.c.start("thinking")
	return p.inner.Ask(ctx, question)
}

// agentSteps shows the agent's steps on stderr, each with the elapsed time
// and the tokens spent so far:
//
//	[  1.2s    812 tok] Step 1: I will search for …
type agentSteps struct {
	c        *console
	start    time.Time
	meter    *llm.Meter      // the agent's model calls in this process
	base     int             // tokens spent before this process (a resumed run)
	progress func(llm.Tally) // a step ended: what this process spent so far
	refused  bool            // the hint about refused pages was given
}

func (s *agentSteps) line(msg string) { s.c.line(s.stamp() + msg) }

// stamp is the start of a step's line: "[  1.2s    812 tok] ".
func (s *agentSteps) stamp() string {
	var spent llm.Tally
	if s.meter != nil {
		spent = s.meter.Total()
	}
	return fmt.Sprintf("[%5.1fs %6s tok] ", time.Since(s.start).Seconds(), compact(s.base+tokens(spent.Usage)))
}

func (s *agentSteps) observe(ev nodes.AgentEvent) {
	for _, l := range app.AgentLines(ev) {
		s.line(l)
	}
	switch ev.Kind {
	case nodes.AgentEventThink:
		s.c.setStatus(fmt.Sprintf("step %d: running tools", ev.Step))
	case nodes.AgentEventAct:
		s.c.setStatus("thinking")
		if !s.refused && app.PageRefused(ev) {
			s.refused = true
			s.line("  hint: " + app.AllowPrivateHint)
		}
	}
	if s.progress != nil && s.meter != nil {
		s.progress(s.meter.Total())
	}
}

// execWarning says that the exec tools are on, what they are not, and how
// the processes of a call are tied to it here.
func (c *cli) execWarning() {
	c.console.line("Warning: python_execute and bash run model-written code as you; they are not a sandbox")
	c.console.line("Code execution: " + tools.ExecContainment())
}
