//go:build temporal

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/atomicfile"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

// batchFlags are research batch's own flags.
type batchFlags struct {
	temporal    app.Temporal
	out         string
	concurrency int
}

const defaultBatchConcurrency = 16

func (c *cli) batchCmd() *cobra.Command {
	var f batchFlags
	cmd := batchCommand()
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErr("research batch takes one FILE of questions, one per line (\"-\" for standard input); got %d arguments", len(args))
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return c.runBatch(cmd, args[0], f) }
	addTemporalFlags(cmd.Flags(), &f.temporal, "the Temporal server's frontend address, HOST:PORT (required)", false)
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "directory of the reports and the summary (required; created if missing)")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", defaultBatchConcurrency, "most runs in flight at once")
	// --review is research's; here only to say why a batch has none.
	cmd.Flags().Bool("review", false, "")
	_ = cmd.Flags().MarkHidden("review")
	return cmd
}

// batchWhy explains the refusal of flags that make no sense with batch.
func batchWhy(name string) string {
	switch name {
	case "format":
		return "does not apply to research batch: it writes each report both as Markdown and as the JSON document"
	case "review":
		return "does not apply to research batch: nobody is there to answer a batch's reviews; review one run at a time with research --temporal HOST:PORT --review \"question\""
	}
	return temporalRunWhy(name)
}

func (c *cli) runBatch(cmd *cobra.Command, file string, f batchFlags) error {
	if f.temporal.Address == "" {
		return usageErr("research batch runs on Temporal: give its address with --temporal HOST:PORT (and start workers there with research worker)")
	}
	if f.out == "" {
		return usageErr("research batch needs --out DIR, the directory of the reports and the summary")
	}
	if err := refuseFlags(cmd, func(name string) bool {
		return clientFlags[name] || perRunFlags[name] || name == "out" || name == "concurrency"
	}, batchWhy); err != nil {
		return err
	}
	if err := checkTemporal(f.temporal); err != nil {
		return err
	}
	if f.concurrency < 1 || f.concurrency > 100000 {
		return usageErr("--concurrency %d: use a whole number from 1 to 100000 (runs in flight at once)", f.concurrency)
	}
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	qs, dups, err := c.readBatchFile(file, request(cfg, ""))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usageErr("--out %s: %v", f.out, errors.Unwrap(err))
	}
	if err := checkDir("--out "+f.out, f.out, false); err != nil {
		return err
	}
	ctx := cmd.Context()
	c.console.setQuiet(c.quiet)
	c.console.start("connecting to Temporal")
	tc, err := c.dialTemporal(ctx, f.temporal)
	if err != nil {
		return err
	}
	defer tc.Close()

	b := &batch{
		c: tc, t: f.temporal, dir: f.out, file: file, concurrency: f.concurrency, prices: cfg.Prices,
		redact: c.console.redact, now: time.Now,
	}
	b.progress = newBatchProgress(c.console, len(qs))
	msg := fmt.Sprintf("Batch of %s from %s to %s on Temporal at %s (namespace %s, task queue %s), %d at a time",
		plural(len(qs), "question", "questions"), file, f.out, f.temporal.Address, f.temporal.Namespace, f.temporal.TaskQueue, f.concurrency)
	if len(dups) > 0 {
		msg += fmt.Sprintf("; asked twice, run once: %s", linesText(dups))
	}
	c.console.line(msg)
	if workersPolling(ctx, tc, f.temporal.TaskQueue) == 0 {
		c.console.line(noWorkerHint(f.temporal))
	}
	rows := b.run(ctx, qs)
	c.console.stop()
	sum := b.summary(rows)
	if err := writeBatchSummary(f.out, sum); err != nil {
		return err
	}
	n := sum.Counts
	switch {
	case context.Cause(ctx) == errInterrupted:
		c.console.errorLine(fmt.Sprintf("interrupted: %d done, %d failed, %s on Temporal, %d not submitted. Run the same command again to pick up: reports in %s are kept, runs still going are followed again, runs that finished meanwhile are fetched",
			n.Done, n.Failed, plural(n.Running, "run goes on", "runs go on"), n.Pending, f.out))
		return &exitError{code: exitInterrupted}
	case n.Failed > 0:
		c.console.line(fmt.Sprintf("Batch finished in %s: %d done, %d failed · summary in %s", time.Since(b.started).Round(time.Second),
			n.Done, n.Failed, filepath.Join(f.out, batchSummaryMD)))
		return fmt.Errorf("%d of %s failed (see %s); run the same command again to retry them", n.Failed,
			plural(n.Total, "question", "questions"), filepath.Join(f.out, batchSummaryMD))
	}
	cost := ""
	if sum.CostUSD != nil && *sum.CostUSD > 0 {
		cost = " · " + llm.USD(*sum.CostUSD)
	}
	c.console.line(fmt.Sprintf("Batch finished in %s: %d done%s · summary in %s", time.Since(b.started).Round(time.Second), n.Done, cost,
		filepath.Join(f.out, batchSummaryMD)))
	return nil
}

// linesText lists line numbers: "lines 7, 12".
func linesText(lines []int) string {
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = strconv.Itoa(l)
	}
	if len(lines) == 1 {
		return "line " + parts[0]
	}
	return "lines " + strings.Join(parts, ", ")
}

// readBatchFile reads the questions of file ("-": stdin).
func (c *cli) readBatchFile(file string, tmpl temporalresearch.Request) ([]batchQuestion, []int, error) {
	var r io.Reader
	if file == "-" {
		if c.stdin == nil {
			return nil, nil, usageErr("research batch -: nothing on standard input")
		}
		r = c.stdin
	} else {
		fh, err := os.Open(file)
		if err != nil {
			return nil, nil, usageErr("research batch %s: %v", file, errors.Unwrap(err))
		}
		defer fh.Close()
		r = fh
	}
	qs, dups, err := parseQuestions(r, tmpl)
	if err != nil {
		return nil, nil, usageErr("research batch %s: %v", file, err)
	}
	if len(qs) == 0 {
		return nil, nil, usageErr("research batch %s: no questions in it (one per line; empty lines and lines starting with # are skipped)", file)
	}
	return qs, dups, nil
}

// batchQuestion is one question of a batch.
type batchQuestion struct {
	N    int // its place among the questions, from 1
	Line int // its line in the file
	// Request is the run's input: the question, and the per-run settings.
	Request temporalresearch.Request
	// ID is the run's workflow ID (batchID).
	ID string
	// Name is its files' name without extension: NNN-slug.
	Name string
}

// parseQuestions reads one question per line: surrounding space trimmed,
// empty lines and lines starting with # skipped, a question that came
// before (the same words) dropped — dups are the lines dropped. Each
// question gets tmpl's settings, its workflow ID and its file name.
func parseQuestions(r io.Reader, tmpl temporalresearch.Request) (qs []batchQuestion, dups []int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxQuestion+1)
	seen := map[string]bool{}
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a byte-order mark
		}
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key := strings.Join(strings.Fields(text), " ")
		if seen[key] {
			dups = append(dups, line)
			continue
		}
		seen[key] = true
		req := tmpl
		req.Question = text
		qs = append(qs, batchQuestion{N: len(qs) + 1, Line: line, Request: req, ID: batchID(req)})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, fmt.Errorf("line %d is longer than 64 KiB: one question per line", line+1)
		}
		return nil, nil, err
	}
	width := max(3, len(strconv.Itoa(len(qs))))
	for i := range qs {
		qs[i].Name = fmt.Sprintf("%0*d-%s", width, qs[i].N, slug(qs[i].Request.Question))
	}
	return qs, dups, nil
}

// batchID is the workflow ID of a batch question's run: derived from the
// question and its per-run settings, so that the same batch run again
// finds its runs, and a question asked with other settings runs anew.
func batchID(req temporalresearch.Request) string {
	key := strings.Join(strings.Fields(req.Question), " ")
	if req.InitialQueries > 0 || req.MaxLoops > 0 {
		key += fmt.Sprintf("\x00queries=%d\x00loops=%d", req.InitialQueries, req.MaxLoops)
	}
	sum := sha256.Sum256([]byte(key))
	return "research-batch-" + hex.EncodeToString(sum[:])[:16]
}

// maxSlug bounds a file name's slug, in runes.
const maxSlug = 48

// slug is a question as a file name part: lower-case letters and digits
// (any script), words joined by '-', cut at a word boundary.
func slug(q string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(q) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	s := []rune(b.String())
	if len(s) > maxSlug {
		cut := string(s[:maxSlug])
		if i := strings.LastIndexByte(cut, '-'); i > maxSlug/2 {
			cut = cut[:i]
		}
		return cut
	}
	if len(s) == 0 {
		return "question"
	}
	return string(s)
}

// batch is one invocation of research batch.
type batch struct {
	c           client.Client
	t           app.Temporal
	dir, file   string
	concurrency int
	prices      llm.Prices
	redact      func(string) string
	now         func() time.Time
	progress    *batchProgress // nil: no output

	started time.Time
	mu      sync.Mutex
	rows    []batchRow
	written time.Time // the summary's last write
}

// run runs the questions, at most b.concurrency in flight, until all are
// done or ctx ends; it returns a row per question.
func (b *batch) run(ctx context.Context, qs []batchQuestion) []batchRow {
	b.started = b.now()
	b.rows = make([]batchRow, len(qs))
	for i, q := range qs {
		b.rows[i] = batchRow{N: q.N, Line: q.Line, Question: q.Request.Question, WorkflowID: q.ID, Status: batchPending}
	}
	// Questions whose reports are written need nothing of Temporal.
	var toRun []int // the questions without a written report
	kept := 0
	for i, q := range qs {
		if row, ok := b.kept(q); ok {
			b.rows[i] = row
			kept++
			continue
		}
		toRun = append(toRun, i)
	}
	b.progress.kept(kept, b.dir)
	b.progress.update(b.counts())
	sem := make(chan struct{}, b.concurrency)
	var wg sync.WaitGroup
	for _, i := range toRun {
		q := qs[i]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b.finish(i, b.one(ctx, q, func(running batchRow) { b.update(i, running) }))
		}()
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]batchRow(nil), b.rows...)
}

// update records a question's row while its run goes on.
func (b *batch) update(i int, row batchRow) {
	b.mu.Lock()
	b.rows[i] = row
	b.mu.Unlock()
	b.progress.update(b.counts())
}

// finish records a question's final row, says so, and writes the summary
// now and then.
func (b *batch) finish(i int, row batchRow) {
	b.mu.Lock()
	b.rows[i] = row
	write := b.now().Sub(b.written) > 2*time.Second
	if write {
		b.written = b.now()
	}
	rows := append([]batchRow(nil), b.rows...)
	b.mu.Unlock()
	if row.Status != batchRunning && row.Status != batchPending {
		b.progress.finished(row)
	}
	b.progress.update(b.counts())
	if write {
		_ = writeBatchSummary(b.dir, b.summary(rows)) // the final write reports errors
	}
}

func (b *batch) counts() batchCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return countRows(b.rows)
}

func countRows(rows []batchRow) batchCounts {
	n := batchCounts{Total: len(rows)}
	for _, r := range rows {
		switch {
		case r.Status == batchDone:
			n.Done++
		case r.failed():
			n.Failed++
		case r.Status == batchRunning:
			n.Running++
		default:
			n.Pending++
		}
	}
	return n
}

// summary is the summary of rows.
func (b *batch) summary(rows []batchRow) batchSummary {
	return batchSummary{Schema: batchSummarySchema, File: b.file, Address: b.t.Address, Namespace: b.t.Namespace, TaskQueue: b.t.TaskQueue,
		Updated: b.now().UTC().Truncate(time.Second), Counts: countRows(rows), CostUSD: totalCost(rows), Questions: rows}
}

// totalCost is the cost of the rows with a report; nil when one of them
// has an unknown cost.
func totalCost(rows []batchRow) *float64 {
	var total float64
	for _, r := range rows {
		if r.Report == "" {
			continue
		}
		if r.CostUSD == nil {
			return nil
		}
		total += *r.CostUSD
	}
	return &total
}

// costCellOf is a row's cost in the progress lines: "$0.0042", or "cost
// unknown" when a price is.
func costCellOf(r batchRow) string {
	if r.CostUSD == nil {
		return "cost unknown"
	}
	return llm.USD(*r.CostUSD)
}

// kept returns the row of a question whose report is already in the
// directory: its JSON document, complete and of this question, and its
// Markdown report.
func (b *batch) kept(q batchQuestion) (batchRow, bool) {
	data, err := os.ReadFile(filepath.Join(b.dir, q.Name+".json"))
	if err != nil {
		return batchRow{}, false
	}
	var doc app.ReportDoc
	if json.Unmarshal(data, &doc) != nil || doc.Incomplete || doc.Question != q.Request.Question {
		return batchRow{}, false
	}
	if _, err := os.Stat(filepath.Join(b.dir, q.Name+".md")); err != nil {
		return batchRow{}, false
	}
	return batchRow{N: q.N, Line: q.Line, Question: q.Request.Question, WorkflowID: q.ID, Status: batchDone, How: howKept,
		Tokens: doc.UsageTotal.TotalTokens, CostUSD: doc.Cost.TotalUSD, DurationMS: doc.Timings.TotalMS, SourcesCited: len(doc.Sources), SourcesGathered: doc.SourcesGathered,
		Report: q.Name + ".md", Document: q.Name + ".json"}, true
}

// batchAction is what to do about a question whose report is not written.
type batchAction int

const (
	actStart  batchAction = iota // no run, or one that failed: start one
	actAttach                    // a run is going on: follow it
	actFetch                     // a run completed: fetch its report
)

// decide looks up the question's workflow on Temporal: the action, and the
// run ID to attach to or fetch from.
func (b *batch) decide(ctx context.Context, q batchQuestion) (batchAction, string, error) {
	desc, err := b.c.DescribeWorkflowExecution(ctx, q.ID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return actStart, "", nil
	}
	if err != nil {
		return actStart, "", fmt.Errorf("looking up run %s on Temporal: %s", q.ID, app.OneLine(err.Error(), 200))
	}
	info := desc.GetWorkflowExecutionInfo()
	runID := info.GetExecution().GetRunId()
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return actAttach, runID, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return actFetch, runID, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return actAttach, "", nil // the chain's latest run
	}
	return actStart, "", nil // failed, cancelled, terminated, timed out
}

// one runs a question to its end, or until ctx ends (then its row says
// running or pending). running is told the row once its run is known.
func (b *batch) one(ctx context.Context, q batchQuestion, running func(batchRow)) batchRow {
	row := batchRow{N: q.N, Line: q.Line, Question: q.Request.Question, WorkflowID: q.ID, Status: batchPending}
	act, runID, err := b.decide(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return row
		}
		row.Status, row.Error = batchFailed, b.redact(err.Error())
		return row
	}
	row.How = map[batchAction]string{actStart: howStarted, actAttach: howAttached, actFetch: howFetched}[act]
	if act == actStart {
		run, err := temporalresearch.Start(ctx, b.c, client.StartWorkflowOptions{
			ID: q.ID, TaskQueue: b.t.TaskQueue,
			// Never a second run of a question that completed; attach to
			// one that is running (a batch started twice at once).
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, q.Request)
		if err != nil {
			if ctx.Err() != nil {
				return row
			}
			row.Status, row.Error = batchFailed, b.redact("submitting: "+app.OneLine(err.Error(), 300))
			return row
		}
		runID = run.RunID()
	}
	row.RunID, row.Status = runID, batchRunning
	running(row)
	measured := b.now()
	out, err := temporalgraph.Attach[*temporalresearch.Outcome](b.c, q.ID, runID).Result(ctx)
	if ctx.Err() != nil {
		return row // detached: the run goes on
	}
	var runErr error
	if err != nil {
		row.Status = failureStatus(err)
		runErr = runFailure(q.ID, err)
		row.Error = b.redact(runErr.Error())
		out, _ = temporalresearch.OutcomeOf(err)
	} else {
		row.Status = batchDone
	}
	var rep *research.Report
	if out != nil {
		rep = out.Report
	}
	if rep == nil {
		if err == nil {
			row.Status, row.Error = batchFailed, "the run returned no report"
		}
		return row
	}
	if rep.Timings.Total == 0 {
		rep.Timings.Total = runDuration(ctx, b.c, q.ID, runID, b.now().Sub(measured))
	}
	row.Tokens = app.Tokens(rep.Usage.Total().Usage)
	row.CostUSD = app.CostUSD(rep.Usage, out.Models, b.prices)
	row.DurationMS = app.MS(rep.Timings.Total)
	row.SourcesCited, row.SourcesGathered = len(rep.Sources), rep.Gathered
	if err := b.write(q, out, runErr); err != nil {
		row.Status, row.Error = batchFailed, err.Error()
		return row
	}
	row.Report, row.Document = q.Name+".md", q.Name+".json"
	return row
}

// failureStatus is the status of a run that ended with err.
func failureStatus(err error) string {
	var (
		canceled *temporal.CanceledError
		term     *temporal.TerminatedError
		timeout  *temporal.TimeoutError
	)
	switch {
	case temporalresearch.TimedOut(err):
		return batchTimedOut
	case errors.As(err, &canceled):
		return batchCancelled
	case errors.As(err, &term):
		return batchTerminated
	case errors.As(err, &timeout):
		return batchTimedOut
	}
	return batchFailed
}

// write writes a question's report: NNN-slug.md, then NNN-slug.json (its
// presence, complete, marks the question done), priced for the workers'
// models at the batch's prices.
func (b *batch) write(q batchQuestion, out *temporalresearch.Outcome, runErr error) error {
	var docErr error
	if runErr != nil {
		docErr = errors.New(b.redact(runErr.Error()))
	}
	rep := out.Report
	doc, err := app.PricedResearchDocument(app.RunRef{RunID: q.ID}, rep, out.Models, b.prices, docErr)
	if err != nil {
		return err
	}
	md := strings.TrimRight(cleanText(rep.Markdown()), "\n") + "\n"
	if err := writeAtomic(filepath.Join(b.dir, q.Name+".md"), []byte(md)); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(b.dir, q.Name+".json"), append(doc, '\n'))
}

// writeAtomic writes a file whole or not at all.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeBatchSummary writes summary.json and summary.md.
func writeBatchSummary(dir string, s batchSummary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, batchSummaryJSON), append(data, '\n')); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, batchSummaryMD), []byte(summaryMarkdown(s)))
}

// summaryMarkdown is summary.md: a line of counts and a table with a row
// per question.
func summaryMarkdown(s batchSummary) string {
	var b bytes.Buffer
	n := s.Counts
	fmt.Fprintf(&b, "# Research batch: %s\n\n", mdCell(s.File))
	fmt.Fprintf(&b, "%s · %d done · %d failed", plural(n.Total, "question", "questions"), n.Done, n.Failed)
	if n.Running > 0 {
		fmt.Fprintf(&b, " · %d running", n.Running)
	}
	if n.Pending > 0 {
		fmt.Fprintf(&b, " · %d not submitted", n.Pending)
	}
	switch {
	case s.CostUSD == nil:
		b.WriteString(" · cost unknown (a model's price is unknown: the config file's prices key gives it)")
	case *s.CostUSD > 0:
		fmt.Fprintf(&b, " · %s in all", llm.USD(*s.CostUSD))
	}
	fmt.Fprintf(&b, " — Temporal at %s, namespace %s, task queue %s; updated %s\n\n", s.Address, s.Namespace, s.TaskQueue, s.Updated.Format(time.RFC3339))
	b.WriteString("| # | Question | Status | Tokens | Cost | Duration | Sources (cited/gathered) | Report |\n")
	b.WriteString("|--:|---|---|--:|--:|--:|--:|---|\n")
	for _, r := range s.Questions {
		status := r.Status
		if r.Error != "" {
			status += ": " + app.OneLine(r.Error, 120)
		}
		tokens, cost, dur, sources, report := "", "", "", "", ""
		if r.Report != "" || r.Status == batchDone {
			tokens = thousands(r.Tokens)
			cost = strings.TrimPrefix(costCellOf(r), "cost ")
			dur = fmt.Sprintf("%.1fs", r.DurationMS/1000)
			sources = fmt.Sprintf("%d/%d", r.SourcesCited, r.SourcesGathered)
		}
		if r.Report != "" {
			report = "[" + r.Report + "](" + r.Report + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.N, mdCell(app.OneLine(r.Question, 100)), mdCell(status), tokens, cost, dur, sources, report)
	}
	return b.String()
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// batchProgress shows a batch's progress on stderr: a line per finished
// question, and on a terminal a progress bar on the last line.
type batchProgress struct {
	c     *console
	total int
}

func newBatchProgress(c *console, total int) *batchProgress {
	p := &batchProgress{c: c, total: total}
	c.start(p.bar(batchCounts{Total: total}))
	return p
}

// barWidth is the progress bar's width in cells.
const barWidth = 20

// bar draws the counts: "[██████░░░░…] 12/50 done · 1 failed · 16 running"
// (the console adds the time elapsed).
func (p *batchProgress) bar(n batchCounts) string {
	filled := 0
	if n.Total > 0 {
		filled = (n.Done + n.Failed) * barWidth / n.Total
	}
	return fmt.Sprintf("[%s%s] %d/%d done · %d failed · %d running", strings.Repeat("█", filled), strings.Repeat("░", barWidth-filled),
		n.Done, n.Total, n.Failed, n.Running)
}

func (p *batchProgress) update(n batchCounts) {
	if p == nil {
		return
	}
	p.c.setStatus(p.bar(n))
}

// kept says how many questions have their reports already.
func (p *batchProgress) kept(n int, dir string) {
	if p == nil || n == 0 {
		return
	}
	p.c.line(fmt.Sprintf("%s already in %s: skipped", plural(n, "report", "reports"), dir))
}

// finished says a question is finished: "[ 3/50] done 003-….md · 11.2k
// tok · $0.0042 · 42.1s · 5/12 sources".
func (p *batchProgress) finished(r batchRow) {
	if p == nil {
		return
	}
	width := len(strconv.Itoa(p.total))
	msg := fmt.Sprintf("[%*d/%d] %s", width, r.N, p.total, r.Status)
	if r.Report != "" {
		msg += fmt.Sprintf(" %s · %s tok · %s · %.1fs · %d/%d sources", r.Report, compact(r.Tokens), costCellOf(r), r.DurationMS/1000, r.SourcesCited, r.SourcesGathered)
	} else {
		msg += " " + strconv.Quote(oneLine(r.Question, 60))
	}
	if r.Error != "" {
		msg += ": " + oneLine(r.Error, 200)
	}
	p.c.line(msg)
}
