// Command research is deepgraph's command line tool: deep research with
// verified citations from any LLM and any search back end, the ReAct agent,
// and the configuration and graph behind them.
//
//	research "Who won the Euro 2024 and who scored the most goals?"
//	research --effort high --format json "…" > report.json
//	research agent --workspace ./scratch "Write a CSV of …"
//	research config        # the effective configuration, secrets redacted
//	research graph         # the deep-search graph as a Mermaid diagram
//	research worker --temporal localhost:7233           # do research runs on Temporal
//	research --temporal localhost:7233 "…"              # submit one there and follow it
//	research batch questions.txt --temporal localhost:7233 --out reports/
//
// Exit status (one table in docs/cli.md): 0 success; 1 the run failed; 2 a
// configuration or usage error (no model configured, a bad flag or config
// value, a misspelt command, an output that cannot be written); research
// agent adds 3 (the agent gave up), 4 (step limit reached) and 5 (stuck); 6
// the run paused for an answer nobody could give here; 7 a research run
// finished but its answer cites no source; 8 the run store cannot be
// written (full disk, read-only: at the start nothing was paid for; during
// a run the report is printed but the run was not kept); 130 interrupted
// with Ctrl-C (the report gathered so far is printed, marked incomplete).
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(Main(os.Args[1:]))
}

// Main runs the command with args and returns the exit status.
func Main(args []string) int {
	ctx, stop := interruptible(context.Background())
	defer stop()
	cli := newCLI(os.Stdin, os.Stdout, os.Stderr)
	return cli.execute(ctx, args)
}

// errInterrupted is the cancellation cause of Ctrl-C (SIGINT) or SIGTERM.
var errInterrupted = errors.New("interrupted")

// interruptible returns a context cancelled (cause errInterrupted) by the
// first SIGINT or SIGTERM; a second one exits at once with status 130.
// stop releases the signal handler and its goroutine.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-sigs:
			cancel(errInterrupted)
		case <-done:
			return
		}
		select {
		case <-sigs:
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		<-finished
		cancel(nil)
	}
}
