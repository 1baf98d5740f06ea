package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/telemetry/export"
	"github.com/deepgraph/deepgraph/tools"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1   // the run failed
	exitUsage       = 2   // configuration or usage error
	exitAgentFailed = 3   // research agent: the agent gave up (terminate with failure)
	exitAgentLimit  = 4   // research agent: the step limit was reached (best-effort answer)
	exitAgentStuck  = 5   // research agent: the agent kept repeating itself
	exitNeedsInput  = 6   // the run paused for an answer nobody could give here (resume it with --answer)
	exitNoSources   = 7   // research: the run finished, but its answer cites no source
	exitStore       = 8   // the run store cannot be written (full disk, read-only): at open, or during the run (not kept)
	exitInterrupted = 130 // Ctrl-C (SIGINT) or SIGTERM
)

// exitError carries an exit status with an error already reported (or to
// report).
type exitError struct {
	code int
	err  error // nil when the message was already printed
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr marks a usage error (exit 2).
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// cli is one invocation of the command.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stdinTTY       bool
	stdoutTTY      bool
	stderrTTY      bool
	noColor        bool // NO_COLOR is set: Markdown goes out as written

	// Flags that are not configuration keys.
	configFile string
	out        string
	quiet      bool
	verbose    bool
	noSave     bool     // keep no run (store: off)
	noInput    bool     // never ask on the terminal: a paused run stops as needs-input
	review     bool     // research: pause for a review of the queries
	thread     string   // research: ask a follow-up on this run's thread
	traceFile  string   // --trace: the run's spans as OTLP/JSON
	runID      string   // the stored run being driven, once there is one
	args       []string // the command line, as given (research-temporal gets it as it is)

	temporal app.Temporal // --temporal and its settings: the run goes to Temporal

	tel *export.Provider // tracing, when OTEL_* or --trace asks for it

	console *console
	lines   *lineHandler         // the warnings' handler, made on first use
	asker   *tools.TerminalAsker // the terminal's one reader, made on first use
}

func newCLI(stdin io.Reader, stdout, stderr io.Writer) *cli {
	return &cli{stdin: stdin, stdout: stdout, stderr: stderr, stdinTTY: isTerminal(stdin), stdoutTTY: isTerminal(stdout),
		stderrTTY: isTerminal(stderr), noColor: os.Getenv("NO_COLOR") != ""}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// researchKeys are the configuration keys with flags on every command.
func researchKeys() []string {
	var keys []string
	for _, k := range config.KeysWithFlags("") {
		if !strings.HasPrefix(k, "agent.") {
			keys = append(keys, k)
		}
	}
	return keys
}

func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "research [flags] \"question\"",
		Short: "Deep research with verified citations, from any LLM and any search back end",
		Long: `research answers a question the way Google's Gemini deep-search quickstart does:
it writes search queries, researches each in parallel, reflects on what is
missing, searches again, and writes an answer whose citations are checked
against the sources it actually gathered.

The report (Markdown, or JSON with --format json) goes to stdout or --out;
the activity timeline goes to stderr. Configuration: flags, then DEEPGRAPH_*
and the providers' variables, then the config file (see research config).

Every run is kept (in <user state dir>/deepgraph/runs.db unless --store says
otherwise; --no-save keeps nothing): research runs lists them, research show
prints a report again, research resume continues a run that stopped — killed,
failed, timed out, interrupted or waiting for an answer — without repeating
finished work, and --thread asks a follow-up question on a run's thread.
--review pauses before each round of searches for you to approve or edit the
queries.

With --temporal HOST:PORT the run goes to a Temporal server instead, where
research workers (research worker) do the work with their own models and
search; this command shows the timeline, asks for --review's answers and
writes the report as above (--timeout bounds the run on the workers), and
Ctrl-C cancels the run and prints what it had gathered. research batch
runs a file of questions there.

A first argument that is one typo away from a command ("research agnet
…", "research shwo ID") is refused before anything is paid for: research
-- "…" researches the text as it is.

Exit status (docs/cli.md): 0 success; 1 the run failed; 2 configuration or
usage error; 3, 4, 5 research agent gave up, reached its step limit, got
stuck; 6 paused for an answer (research resume ID --answer … continues); 7
the answer cites no source (it is printed, but nothing gathered supports
it); 8 the run store cannot be written (full disk, read-only; during a run
the report is printed, but the run was not kept); 130 interrupted (the report gathered so far is printed, marked
incomplete).`,
		Example: `  GEMINI_API_KEY=… research "Who won the Euro 2024 and who scored the most goals?"
  research --effort high --format json --out report.json "state of RISC-V laptops"
  SEARXNG_URL=http://localhost:8888 research -m ollama:qwen3:8b "…"
  research --corpus ~/notes "what did we decide about checkpoints?"
  research --review "how do vector clocks work?"
  research --thread k3f9x2mq "and how do they compare with hybrid logical clocks?"
  research --temporal localhost:7233 "how do vector clocks work?"`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          c.runResearch,
		// Subcommands do not set their own PersistentPreRunE: this one
		// runs for all of them.
		PersistentPreRunE: c.startTelemetry,
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&c.configFile, "config", "", "config file (default $DEEPGRAPH_CONFIG, else <user config dir>/deepgraph/config.yaml)")
	pf.BoolVarP(&c.quiet, "quiet", "q", false, "print nothing on stderr but errors")
	pf.BoolVarP(&c.verbose, "verbose", "v", false, "debug logging on stderr")
	pf.BoolVar(&c.noSave, "no-save", false, "keep nothing of this run (the same as --store off)")
	pf.StringVar(&c.traceFile, "trace", "", "write the run's spans to FILE as OTLP/JSON lines (OTEL_EXPORTER_OTLP_ENDPOINT sends them to a collector)")
	pf.BoolVar(&c.noInput, "no-input", false, "never ask on the terminal: a run that needs an answer stops (exit 6) and waits for research resume --answer")
	if err := config.AddFlags(pf, researchKeys()...); err != nil {
		panic(err) // the key table and this list disagree: a programming error
	}
	root.Flags().StringVarP(&c.out, "out", "o", "", "write the report to FILE instead of stdout")
	root.Flags().BoolVar(&c.review, "review", false, "pause before each round of searches to approve or edit the queries")
	root.Flags().StringVar(&c.thread, "thread", "", "ask a follow-up question on the thread of run ID (its earlier questions and answers are in the prompts)")
	addTemporalFlags(root.Flags(), &c.temporal, "submit the run to the Temporal server at HOST:PORT: research workers there do the work (research worker); this shows its timeline and report, and Ctrl-C cancels it", true)

	root.AddCommand(c.graphCmd(), c.configCmd(), c.versionCmd(), c.agentCmd(), c.runsCmd(), c.showCmd(), c.rmCmd(), c.resumeCmd(), c.serveCmd(), c.flowCmd(), c.mcpCmd(), c.workerCmd(), c.batchCmd(), c.evalCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	c.setHelp(root)
	questionArgs(root)
	return root
}

// execute runs the command line and returns the exit status.
func (c *cli) execute(ctx context.Context, args []string) (code int) {
	c.console = newConsole(c.stderr, c.stderrTTY)
	defer c.console.stop()
	defer func() {
		if r := recover(); r != nil {
			c.console.errorLine(fmt.Sprintf("internal error: %v (please report it)", r))
			code = exitFailed
		}
	}()
	c.args = args
	root := c.root()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	c.stopTelemetry()
	if err == nil || errors.Is(err, errVersionShown) {
		return exitOK
	}
	return c.report(ctx, err)
}

// report prints err as one clear line (plus hints) and returns its status.
func (c *cli) report(ctx context.Context, err error) int {
	var ee *exitError
	code := exitFailed
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
		err = ee.err
	}
	if context.Cause(ctx) == errInterrupted || errors.Is(err, errInterrupted) {
		c.console.errorLine("interrupted")
		return exitInterrupted
	}
	switch {
	case errors.Is(err, app.ErrNoModel):
		c.console.plain(howToConfigure())
		return exitUsage
	case app.IsNoSearch(err):
		c.console.errorLine(err.Error())
		c.console.plain("\n" + app.HowToConfigureSearch)
		return exitUsage
	case errors.Is(err, config.ErrInvalid), errors.Is(err, app.ErrSetup):
		code = exitUsage
	case errors.Is(err, app.ErrStoreUnwritable) && code == exitFailed:
		code = exitStore
	}
	for _, line := range errorLines(err, c.verbose) {
		c.console.errorLine(line)
	}
	for _, h := range hints(err) {
		c.console.plain("  hint: " + h + "\n")
	}
	return code
}

// loadConfig resolves the configuration for cmd.
func (c *cli) loadConfig(cmd *cobra.Command) (*config.Config, error) {
	cfg, err := config.Loader{File: c.configFile, Flags: cmd.Flags(), DefaultModel: app.DefaultModel}.Load()
	if err != nil {
		return nil, err
	}
	c.console.addSecrets(cfg)
	return cfg, nil
}

// logger is the program's slog logger: warnings on stderr, one readable
// line each (lineHandler); every record in slog's text form with -v;
// nothing with -q.
func (c *cli) logger() *slog.Logger {
	switch {
	case c.verbose:
		return slog.New(c.traced(slog.NewTextHandler(c.console, &slog.HandlerOptions{Level: slog.LevelDebug})))
	case c.quiet:
		return slog.New(slog.DiscardHandler)
	}
	if c.lines == nil {
		c.lines = newLineHandler(c.console, slog.LevelWarn)
	}
	return slog.New(c.traced(c.lines))
}

// maxQuestion bounds a question (or task), given as arguments or piped in.
const maxQuestion = 64 << 10

// question is the question (or task) from the arguments, or from stdin when
// it is piped in; none is the error when there is none.
func (c *cli) question(args []string, none string) (string, error) {
	q := strings.TrimSpace(strings.Join(args, " "))
	if len(q) > maxQuestion {
		return "", usageErr("the question is %s, longer than the 64 KiB a question or task may be: shorten it, or put the material in a directory and research it with --corpus DIR", kib(len(q)))
	}
	if q == "" && !c.stdinTTY && c.stdin != nil {
		b, err := io.ReadAll(io.LimitReader(c.stdin, maxQuestion+1))
		if err != nil {
			return "", fmt.Errorf("reading the question from stdin: %w", err)
		}
		if len(b) > maxQuestion {
			return "", usageErr("the question on stdin is longer than the 64 KiB a question or task may be: shorten it, or put the material in a directory and research it with --corpus DIR")
		}
		q = strings.TrimSpace(string(b))
	}
	if q == "" {
		return "", usageErr("%s", none)
	}
	return q, nil
}

// kib writes a size in bytes as KiB: "100 KiB".
func kib(n int) string { return fmt.Sprintf("%d KiB", (n+1023)/1024) }
