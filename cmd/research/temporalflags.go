package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deepgraph/deepgraph/internal/app"
)

// What research and research-temporal share of research on Temporal: the
// commands' names and help, and the settings' flags. The commands' work is
// in temporal.go, worker.go and batch.go, built only into research-temporal
// (build tag temporal); research hands them to that program
// (temporalexec.go).

// temporalProgram is the name of the program that runs research on
// Temporal.
const temporalProgram = "research-temporal"

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

// workerCommand is research worker's name and help.
func workerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "worker --temporal HOST:PORT",
		Short: "Run a research worker for Temporal: it runs the research of runs submitted with --temporal or research batch",
		Long: `worker connects to a Temporal server and does the work of the research runs
submitted there (research --temporal, research batch): it runs the research
workflow and its tasks — query writing, each web search, reflection, the
answer — with the models and search back end of its own configuration,
built exactly as a local run builds them (flags, DEEPGRAPH_* and the
providers' variables, the config file). Clients need no model keys.

Start as many workers as you like, on as many machines, with the same
--namespace and --task-queue (and, if given, the same --blob-dir, a
directory every worker and client mounts). A worker that dies loses
nothing finished: its running tasks run again on another worker, and runs
go on. A running task heartbeats every --heartbeat (default 2s); Temporal
gives up on a worker that missed three beats, so a lost worker's tasks
move to another after 3×--heartbeat (6s by default). --concurrency bounds
the tasks it runs at once; the model and
search limits (max_concurrency, search_concurrency, page_concurrency)
bound its requests to each provider.

SIGINT or SIGTERM stops it gracefully: it takes no new task and lets the
running ones finish for up to --stop-timeout (a second Ctrl-C quits at
once); tasks it did not finish run again elsewhere.`,
		Example: `  OPENAI_API_KEY=… SEARXNG_URL=http://localhost:8888 research worker --temporal localhost:7233
  research worker --temporal temporal.internal:7233 --namespace research --blob-dir /mnt/shared/deepgraph-blobs --concurrency 128`,
	}
}

// batchCommand is research batch's name and help.
func batchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "batch FILE --temporal HOST:PORT --out DIR",
		Short: "Research every question of a file on Temporal: one report per question, a summary table, resumable",
		Long: `batch submits one research run per line of FILE to Temporal, where research
workers (research worker) do the work, and writes each report to DIR as
NNN-slug.md and NNN-slug.json (the document --format json prints; NNN is
the question's place in FILE), and a summary table of every question's
status, tokens, cost, duration and sources to DIR/summary.md and
summary.json (the cost at the prices of this configuration, for the
models the workers used).

FILE has one question per line ("-" reads standard input); empty lines
and lines starting with # are skipped, and a question asked twice runs
once. --concurrency bounds the runs in flight; the workers' own
--concurrency bounds their tasks. --queries, --loops and --effort apply to
every run, and --timeout bounds each run (a run past it stops with its
incomplete report, status timed_out); the workers' configuration decides
the rest.

Stopping and starting again is safe. Each question's run has a workflow
ID derived from the question (and --queries/--loops, not --timeout), so the same command
picks up where it stopped: a question whose report is in DIR is skipped,
a run still going on Temporal is followed again, one that finished
meanwhile has its report fetched, and one that failed, was cancelled or
terminated or timed out runs again. Ctrl-C detaches: the runs in flight go
on on Temporal.

Exit status: 0 every question done, 1 some failed (their incomplete
reports are written; run the command again to retry them), 2 usage error,
130 interrupted.`,
		Example: `  research batch questions.txt --temporal localhost:7233 --out reports/
  research batch questions.txt --temporal temporal.internal:7233 --namespace research --blob-dir /mnt/shared/blobs --out reports/ --concurrency 64 --effort low`,
	}
}
