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
	"github.com/deepgraph/deepgraph/nodes"
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
--allow-exec. --tools narrows the set.

The workspace is --workspace DIR (it must exist; your home directory and /
are refused), or else a new temporary directory, which is kept after the run
and printed. SECURITY: python_execute and bash run model-written code as you,
with your files and network. They run in the workspace with a scrubbed
environment and are killed with their process group, but they are NOT a
sandbox; use them in a container or VM for untrusted tasks.

Exit status: 0 the task is done; 1 the run failed; 2 configuration or usage
error; 3 the agent gave up (terminate with failure); 4 the step limit was
reached (a best-effort answer is printed); 5 the agent was stuck repeating
itself; 130 interrupted.`,
		Example: `  research agent "Summarise the three latest Go releases into notes.md" --workspace ./notes
  research agent --allow-exec --tools str_replace_editor,python_execute,terminate "Plot …"`,
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
	task, err := c.question(args)
	if err != nil {
		return usageErr("no task: run research agent \"your task\" (or pipe it in)")
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)

	aio := app.AgentIO{Logger: logger}
	if c.stdinTTY {
		aio.Human = &pausingAsker{inner: app.TerminalHuman(c.stdin, c.console), c: c.console}
	}
	setup, err := app.NewAgent(ctx, cfg, aio)
	if err != nil {
		return err
	}
	defer setup.Close()

	start := time.Now()
	ws := setup.Workspace
	if setup.TempWorkspace {
		ws += " (new; kept after the run)"
	}
	c.console.line(fmt.Sprintf("Agent using %s in workspace %s", setup.Spec, ws))
	c.console.line("Tools: " + strings.Join(setup.Tools.Names(), ", "))
	if app.HasExec(setup.Tools) {
		c.console.line("Warning: python_execute and bash run model-written code as you; they are not a sandbox")
	}
	c.console.start("thinking")
	steps := &agentSteps{c: c.console, start: start}
	res, runErr := setup.Agent.Run(ctx, task, steps.observe)
	c.console.stop()

	if context.Cause(ctx) == errInterrupted {
		return &exitError{code: exitInterrupted, err: errInterrupted}
	}
	if runErr != nil {
		return runErr
	}
	tot := res.Usage.Total()
	c.console.line(fmt.Sprintf("Finished: %s in %.1fs · %s · %s tokens · %s", res.Status, time.Since(start).Seconds(),
		plural(res.Steps, "step", "steps"), thousands(tokens(tot.Usage)), plural(tot.Calls, "LLM call", "LLM calls")))
	answer := strings.TrimRight(cleanText(res.Answer), "\n") + "\n"
	if err := c.output(answer); err != nil {
		return err
	}
	switch res.Status {
	case nodes.AgentSuccess, nodes.AgentAnswered:
		return nil
	case nodes.AgentFailure:
		return &exitError{code: exitAgentFailed, err: errors.New("the agent could not complete the task (it ended with status failure); its explanation is above")}
	case nodes.AgentMaxSteps:
		return &exitError{code: exitAgentLimit, err: fmt.Errorf("the agent reached its step limit (%d; raise it with --max-steps); the answer above is a best effort", cfg.Agent.MaxSteps)}
	case nodes.AgentStuck:
		return &exitError{code: exitAgentStuck, err: errors.New("the agent was stuck repeating itself and stopped; try a more capable model or rephrase the task")}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("the agent ended with status %q", res.Status)}
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

// agentSteps shows the agent's steps on stderr.
type agentSteps struct {
	c     *console
	start time.Time
}

func (s *agentSteps) line(msg string) {
	s.c.line(fmt.Sprintf("[%5.1fs] %s", time.Since(s.start).Seconds(), msg))
}

func (s *agentSteps) observe(ev nodes.AgentEvent) {
	switch ev.Kind {
	case nodes.AgentEventThink:
		if t := oneLine(ev.Thought, 240); t != "" {
			s.line(fmt.Sprintf("Step %d: %s", ev.Step, t))
		} else {
			s.line(fmt.Sprintf("Step %d", ev.Step))
		}
		for _, call := range ev.Calls {
			s.line(fmt.Sprintf("  → %s %s", oneLine(call.Name, 40), oneLine(string(call.Arguments), 200)))
		}
		s.c.setStatus(fmt.Sprintf("step %d: running tools", ev.Step))
	case nodes.AgentEventAct:
		mark := "←"
		if ev.Failed {
			mark = "✗"
		}
		s.line(fmt.Sprintf("  %s %s (%.1fs): %s", mark, oneLine(ev.Tool, 40), ev.Duration.Seconds(), oneLine(ev.Output, 200)))
		s.c.setStatus("thinking")
	case nodes.AgentEventNudge:
		s.line("  ! the agent repeated itself and was told to change strategy")
	case nodes.AgentEventDone:
		s.line("Done: " + string(ev.Status))
	}
}
