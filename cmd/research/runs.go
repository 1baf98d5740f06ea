package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/tools"
)

// errNoAnswer: nobody can answer on the terminal (its input ended).
var errNoAnswer = errors.New("no answer")

// openStore opens the configured store; nil with --no-save or store: off.
func (c *cli) openStore(ctx context.Context, cfg *config.Config) (*app.Store, error) {
	if c.noSave {
		return nil, nil
	}
	return app.OpenStore(ctx, cfg)
}

// withStore runs fn, the body of a command (named by what) that works on
// the stored runs, with the configuration and the open store.
func (c *cli) withStore(cmd *cobra.Command, what string, fn func(ctx context.Context, cfg *config.Config, st *app.Store) error) error {
	return c.withStoreTo(cmd, what, false, fn)
}

// withStoreToRead is withStore for a command that only reads the store: one
// that cannot be written (read-only, on a full disk) is opened read-only.
func (c *cli) withStoreToRead(cmd *cobra.Command, what string, fn func(ctx context.Context, cfg *config.Config, st *app.Store) error) error {
	return c.withStoreTo(cmd, what, true, fn)
}

func (c *cli) withStoreTo(cmd *cobra.Command, what string, readOnly bool, fn func(ctx context.Context, cfg *config.Config, st *app.Store) error) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var st *app.Store
	switch {
	case c.noSave:
	case readOnly:
		st, err = app.OpenStoreToRead(ctx, cfg)
	default:
		st, err = app.OpenStore(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if st == nil {
		return usageErr("%s works on the stored runs, but the store is off (--no-save or store: off)", what)
	}
	defer st.Close()
	return fn(ctx, cfg, st)
}

func checkpointer(st *app.Store) graph.Checkpointer {
	if st == nil {
		return nil
	}
	return st.Checkpointer
}

// runLine names the run being driven and where it is kept, for the first
// lines of its output.
func runLine(st *app.Store, tr *app.Tracker) string {
	resumed := ""
	if tr.Resumed {
		resumed = " resumed"
	}
	return fmt.Sprintf("Run %s%s, kept in %s", tr.Run.ID, resumed, st.Where)
}

// recordUsage puts what a run spent, as its state counts it, in its record
// (nothing without a store): tokens, calls and the cost in US dollars, each
// role priced at its model in models with prices overriding the built-in
// ones (nil when a price is unknown).
func recordUsage(tr *app.Tracker, u llm.UsageByRole, models map[string]string, prices llm.Prices) {
	if tr != nil {
		tot := u.Total()
		tr.Run.Tokens, tr.Run.Calls = int64(tokens(tot.Usage)), tot.Calls
		tr.Run.Cost = app.CostUSD(u, models, prices)
	}
}

// canAsk reports whether a paused run can be answered here and now.
func (c *cli) canAsk() bool { return c.stdinTTY && !c.noInput }

// terminal is the one reader of the terminal's answers.
func (c *cli) terminal() *tools.TerminalAsker {
	if c.asker == nil {
		c.asker = tools.NewTerminalAsker(c.stdin, c.console)
	}
	return c.asker
}

// ask asks on the terminal with the spinner paused; an input that ended is
// errNoAnswer.
func (c *cli) ask(ctx context.Context, heading, question string) (string, error) {
	c.console.stop()
	defer c.console.start("working")
	line, err := c.terminal().AskAs(ctx, heading, question)
	if errors.Is(err, tools.ErrNoHuman) {
		return "", errNoAnswer
	}
	return line, err
}

// askReview shows the queries a run is about to search and reads the
// person's answer, asking again when it cannot be read.
func (c *cli) askReview(ctx context.Context, req *research.ReviewRequest) (research.ReviewAnswer, error) {
	text := reviewText(req) + "\nPress Enter to search them, type new queries separated by \";\" to replace them, or \"stop\" to write the answer now."
	for {
		line, err := c.ask(ctx, "review the queries before they are searched", text)
		if err != nil {
			return research.ReviewAnswer{}, err
		}
		ans, err := app.ParseReviewAnswer(line)
		if err == nil {
			return ans, nil
		}
		text = err.Error()
	}
}

func reviewText(req *research.ReviewRequest) string {
	var b strings.Builder
	if req.Stage == research.ReviewFollowUp {
		fmt.Fprintf(&b, "Reflection %d found missing: %s\n", req.Loop, oneLine(req.KnowledgeGap, 300))
	}
	for i, q := range req.Queries {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, oneLine(q, 200))
	}
	return strings.TrimRight(b.String(), "\n")
}

// pausedForReview says how to continue a run that waits for a review.
func (c *cli) pausedForReview(id string, req *research.ReviewRequest) {
	c.console.plain(fmt.Sprintf("Paused: run %s waits for a review of the queries it is about to search:\n%s\n", id, reviewText(req)))
	c.console.plain(fmt.Sprintf("Continue it with: research resume %s --answer ok   (or \"stop\", or new queries separated by \";\")\n", id))
}

// pausedForQuestion says how to continue an agent run that waits for an
// answer to its question, or for the approval of a tool call.
func (c *cli) pausedForQuestion(id string, res *nodes.AgentResult) {
	if res.Approval != nil {
		c.console.plain(fmt.Sprintf("Paused: run %s waits for your approval of a tool call:\n  %s\n", id, oneLine(res.Waiting.Question, 2500)))
		c.console.plain(fmt.Sprintf("Continue it with: research resume %s --answer approve   (or \"reject: REASON\", or \"edit: {JSON arguments}\")\n", id))
		return
	}
	c.console.plain(fmt.Sprintf("Paused: run %s waits for your answer to the agent's question:\n  %s\n", id, oneLine(res.Waiting.Question, 500)))
	c.console.plain(fmt.Sprintf("Continue it with: research resume %s --answer \"…\"\n", id))
}

func (c *cli) runsCmd() *cobra.Command {
	var limit int
	var prune string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the stored runs, newest first (--prune 30d removes old ones)",
		Long: `runs lists the runs kept in the store: id, start, status (done, interrupted,
failed, needs-input, running), tokens, cost in US dollars ("unknown" when a
model's price is unknown — the config file's prices key gives it — and "—"
for a run that made no model call), duration and question. A run whose
process was killed shows as interrupted: research resume ID continues it.
--format json prints them as a JSON array for scripts. --prune AGE removes
runs that started longer ago than AGE (30d, 12h, 2w) with their checkpoints.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			with := c.withStoreToRead
			if prune != "" {
				with = c.withStore
			}
			return with(cmd, "research runs", func(ctx context.Context, cfg *config.Config, st *app.Store) error {
				if prune != "" {
					return c.prune(ctx, st, prune)
				}
				runs, err := st.Runs.List(ctx, runstore.ListOptions{Limit: limit})
				if err != nil {
					return err
				}
				if cfg.Format == config.FormatJSON {
					return c.printJSON(runsJSON(runs))
				}
				return c.output(runsTable(runs, time.Now()))
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most N runs (0: all)")
	cmd.Flags().StringVar(&prune, "prune", "", "remove runs started longer ago than AGE (e.g. 30d, 12h, 2w) instead of listing")
	return cmd
}

// runJSON is one run as research runs --format json prints it.
type runJSON struct {
	ID         string          `json:"id"`
	Thread     string          `json:"thread"`
	Kind       runstore.Kind   `json:"kind"`
	Question   string          `json:"question"`
	Status     runstore.Status `json:"status"`
	Started    time.Time       `json:"started"`
	Ended      *time.Time      `json:"ended,omitempty"`
	DurationMS float64         `json:"duration_ms"`
	Tokens     int64           `json:"tokens"`
	// CachedTokens are the input tokens read from the providers' prompt
	// caches, from the run's report; 0 without one.
	CachedTokens int `json:"cached_tokens"`
	Calls        int `json:"llm_calls"`
	// CostUSD is what the run's model calls cost; null when unknown.
	CostUSD *float64 `json:"cost_usd"`
	Error   string   `json:"error,omitempty"`
}

func runsJSON(runs []*runstore.Run) []runJSON {
	now := time.Now()
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		j := runJSON{ID: r.ID, Thread: r.Thread, Kind: r.Kind, Question: r.Question, Status: r.Effective(now, runstore.Alive),
			Started: r.Started, DurationMS: app.MS(r.Duration(now, runstore.Alive)), Tokens: r.Tokens, CachedTokens: cachedOf(r), Calls: r.Calls, CostUSD: r.Cost, Error: r.Error}
		if !r.Ended.IsZero() {
			e := r.Ended
			j.Ended = &e
		}
		out = append(out, j)
	}
	return out
}

func runsTable(runs []*runstore.Run, now time.Time) string {
	if len(runs) == 0 {
		return "No runs are kept yet: research \"question\" starts one.\n"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTARTED\tSTATUS\tTOKENS\tCOST\tDURATION\tQUESTION")
	for _, r := range runs {
		q := oneLine(r.Question, 70)
		if r.Kind == runstore.KindAgent || r.Kind == runstore.KindFlow {
			q = string(r.Kind) + ": " + q
		}
		toks := thousands(int(r.Tokens))
		if n := cachedOf(r); n > 0 {
			toks += " (" + thousands(n) + " cached)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04"), r.Effective(now, runstore.Alive),
			toks, costCell(r), r.Duration(now, runstore.Alive).Round(100*time.Millisecond), q)
	}
	_ = w.Flush()
	return b.String()
}

// cachedOf is the input tokens a run read from prompt caches, as its report
// has them (usage_total.cached_tokens); 0 for a run without a report.
func cachedOf(r *runstore.Run) int {
	var doc struct {
		UsageTotal struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"usage_total"`
	}
	if len(r.Report) == 0 || json.Unmarshal(r.Report, &doc) != nil {
		return 0
	}
	return doc.UsageTotal.CachedTokens
}

// costCell is a run's cost in the table: "$0.0042"; "unknown" when a
// price of its models is unknown (or it was recorded before costs were);
// "—" when it made no model call.
func costCell(r *runstore.Run) string {
	switch {
	case r.Calls == 0 && r.Tokens == 0:
		return "—"
	case r.Cost == nil:
		return "unknown"
	}
	return llm.USD(*r.Cost)
}

// prune removes runs older than age, with the checkpoints only they used.
func (c *cli) prune(ctx context.Context, st *app.Store, age string) error {
	d, err := parseAge(age)
	if err != nil {
		return usageErr("--prune %s: %v", age, err)
	}
	removed, err := st.Prune(ctx, time.Now().Add(-d))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "Removed %s started before %s.\n", plural(len(removed), "run", "runs"), time.Now().Add(-d).Format("2006-01-02 15:04"))
	return err
}

// parseAge reads a duration with days and weeks: 30d, 2w, 12h, 90m.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	if len(s) > 1 {
		if u, ok := unit[s[len(s)-1]]; ok {
			n, err := strconv.ParseFloat(s[:len(s)-1], 64)
			if err == nil && n > 0 && n < 100000 {
				return time.Duration(n * float64(u)), nil
			}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("use an age such as 30d, 2w, 12h or 90m")
	}
	return d, nil
}

func (c *cli) printJSON(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return c.output(string(data) + "\n")
}

func (c *cli) showCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a stored run's report again (--format json for the JSON document)",
		Long: `show prints the report of a stored run as research printed it — or, for a
run that stopped before its report (killed, failed), the report built from
what it had gathered, marked incomplete. An agent run prints its answer; a
flow its summary (or, for a flow that stopped, what its finished steps found).
ID may be a unique prefix of the run's id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStoreToRead(cmd, "research show", func(ctx context.Context, cfg *config.Config, st *app.Store) error {
				run, err := st.FindRun(ctx, args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				switch run.Kind {
				case runstore.KindAgent:
					return c.showAgent(cfg, run)
				case runstore.KindFlow:
					return c.showFlow(ctx, cfg, st, run)
				}
				return c.showResearch(ctx, cfg, st, run)
			})
		},
	}
}

func (c *cli) showResearch(ctx context.Context, cfg *config.Config, st *app.Store, run *runstore.Run) error {
	if len(run.Report) > 0 {
		if cfg.Format == config.FormatJSON {
			return c.output(string(run.Report) + "\n")
		}
		var doc app.ReportDoc
		if err := json.Unmarshal(run.Report, &doc); err != nil {
			return fmt.Errorf("run %s: its stored report cannot be read: %w", run.ID, err)
		}
		return c.outputMarkdown(doc.Markdown)
	}
	set, err := app.SettingsOf(run)
	if err != nil {
		return err
	}
	rep, err := app.SavedReport(ctx, st.Checkpointer, run.Thread, set.Backend)
	if err != nil {
		return err
	}
	doc, err := jsonDocument(app.RunRef{RunID: run.ID, ThreadID: run.Thread}, rep, set.Models, errors.New(orText(run.Error, string(run.Effective(time.Now(), runstore.Alive)))))
	if err != nil {
		return err
	}
	return c.writeReport(cfg, rep, doc)
}

func (c *cli) rmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID…",
		Short: "Remove stored runs and their checkpoints",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, "research rm", func(ctx context.Context, cfg *config.Config, st *app.Store) error {
				for _, id := range args {
					run, err := st.FindRun(ctx, id)
					if err != nil {
						return usageErr("%v", err)
					}
					switch run.Effective(time.Now(), runstore.Alive) {
					case runstore.StatusRunning:
						return usageErr("run %s is running now (process %d); stop it before removing it", run.ID, run.PID)
					case runstore.StatusQueued:
						return usageErr("run %s waits in the queue of research serve; cancel it there before removing it", run.ID)
					}
					if err := st.Remove(ctx, run); err != nil {
						return err
					}
					fmt.Fprintf(c.stdout, "Removed run %s.\n", run.ID)
				}
				return nil
			})
		},
	}
}

func (c *cli) resumeCmd() *cobra.Command {
	var answer string
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Continue a stored run that stopped: interrupted, timed out, failed, killed, or waiting for an answer",
		Long: `resume continues a stored run from its last stored step: work that had
finished — model calls, searches, tool calls — is not done again. The run
keeps its models and limits (flags given here override them); keys come from
the environment as usual.

A run that waits for an answer (research --review, or an agent that asked a
question) asks on the terminal, or takes --answer: for a review "ok" approves
the queries, "stop" writes the answer now, and anything else replaces the
queries (separated by ";"); for an agent it is the answer to its question, or,
when it waits for the approval of a tool call (--approve-tools), "approve",
"reject: REASON" or "edit: {JSON arguments}"; for a flow that waits for its
plan to be approved (research flow --approve-plan), "approve" (or "ok"),
"no: REASON", or new steps for what is not done, separated by ";".

A tool call with side effects (bash, python_execute, an editor write, an MCP
tool not annotated read-only) that was running when the run stopped — its
process killed, the machine down — is not run again: the agent is told its
outcome is unknown (with the file's current content for an editor write), or,
with --approve-tools, you are asked whether to run it again.`,
		Example: `  research resume k3f9x2mq
  research resume k3f9 --answer "ok"
  research resume k3f9 --answer "raft leader election; raft log compaction"
  research resume k3f9 --answer "reject: do not delete files, move them to old/"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.resume(cmd, args[0], answer)
		},
	}
	cmd.Flags().StringVar(&answer, "answer", "", "the answer the run waits for (review: ok, stop, or queries separated by \";\")")
	if err := config.AddFlags(cmd.Flags(), config.KeysWithFlags("agent.")...); err != nil {
		panic(err)
	}
	return cmd
}

func (c *cli) resume(cmd *cobra.Command, id, answer string) error {
	return c.withStore(cmd, "research resume", func(ctx context.Context, cfg *config.Config, st *app.Store) error {
		logger := c.logger()
		c.console.setQuiet(c.quiet)
		run, err := st.FindRun(ctx, id)
		if err != nil {
			return usageErr("%v", err)
		}
		switch run.Effective(time.Now(), runstore.Alive) {
		case runstore.StatusDone:
			return usageErr("run %s is done; research show %s prints its report", run.ID, run.ID)
		case runstore.StatusQueued:
			return usageErr("run %s waits in the queue of research serve, which runs it; cancel it there to run it here", run.ID)
		}
		// A bad answer is refused before the run is touched: it keeps
		// waiting as it was.
		opts := []research.RunOption{research.RunID(run.ID)}
		if answer != "" && run.Kind == runstore.KindResearch {
			ans, err := app.ParseReviewAnswer(answer)
			if err != nil {
				return usageErr("--answer: %v", err)
			}
			opts = append(opts, research.Answer(ans))
		}
		set, err := app.SettingsOf(run)
		if err != nil {
			return err
		}
		set.Apply(cfg, func(key string) bool { return flagChanged(cmd, key) })
		if set.Agent != nil && !flagChanged(cmd, "agent.mcp") {
			// The run's MCP servers, as it started with them (its calls
			// of their tools, approvals included, go on), here only: a
			// server resuming a run never starts commands it stored.
			cfg.Agent.MCP = set.Agent.MCP
		}
		// The models and tools are set up before the run is marked as
		// running here (claim: Continue): a setup error (a missing key,
		// say) leaves it as it was.
		claim := func() (*app.Tracker, error) {
			tr, err := st.Continue(ctx, run, logger)
			if err != nil {
				return nil, usageErr("%v", err)
			}
			return tr, nil
		}
		c.console.start("preparing")
		if run.Kind == runstore.KindFlow {
			ans, err := flowAnswer(ctx, st, run.Thread, answer)
			if err != nil {
				return err
			}
			setup, err := app.NewFlow(ctx, cfg, app.AgentIO{Logger: logger}, set.Flow.Options(st.Checkpointer))
			if err != nil {
				return err
			}
			defer setup.Close()
			tr, err := claim()
			if err != nil {
				return err
			}
			return c.resumeFlow(ctx, cfg, setup, st, tr, ans)
		}
		if run.Kind == runstore.KindAgent {
			setup, err := c.agentSetup(ctx, cfg, st)
			if err != nil {
				return err
			}
			defer setup.Close()
			tr, err := claim()
			if err != nil {
				return err
			}
			return c.resumeAgent(ctx, cfg, setup, st, tr, answer)
		}
		r, err := app.NewResearch(ctx, cfg, logger, st.Checkpointer)
		if err != nil {
			return err
		}
		defer r.Close()
		tr, err := claim()
		if err != nil {
			return err
		}
		return c.driveResearch(ctx, cfg, r, st, tr, func(ctx context.Context, more ...research.RunOption) (*research.Report, error) {
			return r.Resume(ctx, run.Thread, append(opts, more...)...)
		})
	})
}

// flagChanged reports whether the flag of a configuration key was given.
func flagChanged(cmd *cobra.Command, key string) bool {
	for _, k := range config.Keys() {
		if k.Name == key && k.Flag != "" {
			return cmd.Flags().Changed(strings.TrimPrefix(k.Flag, "--"))
		}
	}
	return false
}
