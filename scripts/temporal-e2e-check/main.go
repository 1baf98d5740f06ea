// Command temporal-e2e-check checks what scripts/temporal-e2e.sh produced.
//
//	temporal-e2e-check reports --out DIR --questions FILE --urls URL
//
// checks one Markdown report per question in DIR (the summary file aside):
// each has an answer that names its question, cites at least one source,
// and every URL it cites or lists under Sources is one the fake handed out
// (URL is the fake's /_fake/urls); no invented link survives.
//
//	temporal-e2e-check history --temporal HOST:PORT --runs N [--count-file FILE]
//
// reads the history of every research run on the server (there must be N,
// all completed) and checks that no finished activity ran twice: each
// scheduled activity completes at most once and no activity ID is scheduled
// again after it completed. Activities that ran more than one attempt
// (their first attempt lost with a worker: a heartbeat or start-to-close
// timeout) are listed. With the fake's --count-file, every model prompt
// sent more than once must belong to such a re-executed activity of the
// same run and node.
//
//	temporal-e2e-check wait --temporal HOST:PORT [--task-queue Q --pollers N]
//
// waits until the server answers, and until N workers poll task queue Q
// (for workflow and activity tasks).
//
//	temporal-e2e-check inflight --temporal HOST:PORT --identity-prefix PID@ [--min N --wait D]
//
// waits until at least N activities of research runs are running on the
// worker whose identity starts with the prefix (at most --wait), and prints
// how many there are.
//
//	temporal-e2e-check durations --temporal HOST:PORT --question Q
//
// prints how long each completed research run of question Q took on the
// server (its start to its close, as Temporal recorded them) and the median.
//
//	temporal-e2e-check freeport
//
// prints a free loopback TCP port.
//
// Each prints what it found and exits 1 when a check fails.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: temporal-e2e-check reports|history|wait|inflight|durations|freeport [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "reports":
		err = reports(os.Args[2:])
	case "history":
		err = history(os.Args[2:])
	case "wait":
		err = wait(os.Args[2:])
	case "freeport":
		err = freePort()
	case "inflight":
		err = inflight(os.Args[2:])
	case "durations":
		err = durations(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (reports, history, wait, inflight, durations, freeport)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal-e2e-check:", err)
		os.Exit(1)
	}
}

// ------------------------------------------------------------ wait, ports

func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func wait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	hostPort := fs.String("temporal", "127.0.0.1:7233", "Temporal frontend")
	namespace := fs.String("namespace", "default", "namespace")
	queue := fs.String("task-queue", "", "task queue whose pollers to wait for")
	pollers := fs.Int("pollers", 1, "workers to wait for on --task-queue")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var last error
	for {
		last = waitOnce(ctx, *hostPort, *namespace, *queue, *pollers)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited %s: %w", *timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func waitOnce(ctx context.Context, hostPort, namespace, queue string, pollers int) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
		return err
	}
	if queue == "" {
		return nil
	}
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.DescribeTaskQueue(ctx, queue, typ)
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		for _, p := range resp.GetPollers() {
			ids[p.GetIdentity()] = true
		}
		if len(ids) < pollers {
			return fmt.Errorf("%d of %d workers poll %s for %s tasks", len(ids), pollers, queue, typ)
		}
	}
	return nil
}

func inflight(args []string) error {
	fs := flag.NewFlagSet("inflight", flag.ContinueOnError)
	hostPort := fs.String("temporal", "127.0.0.1:7233", "Temporal frontend")
	namespace := fs.String("namespace", "default", "namespace")
	prefix := fs.String("identity-prefix", "", "the worker's identity, or its start (the SDK's default is PID@HOST@)")
	minimum := fs.Int("min", 1, "activities to wait for")
	waitFor := fs.Duration("wait", 10*time.Second, "how long to wait")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *prefix == "" {
		return errors.New("inflight needs --identity-prefix")
	}
	c, err := client.Dial(client.Options{HostPort: *hostPort, Namespace: *namespace, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *waitFor+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(*waitFor)
	for {
		n, err := countInflight(ctx, c, *namespace, *prefix)
		if err != nil {
			return err
		}
		if n >= *minimum || time.Now().After(deadline) {
			fmt.Println(n)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countInflight counts the started activities of open research runs whose
// last worker's identity starts with prefix.
func countInflight(ctx context.Context, c client.Client, namespace, prefix string) (int, error) {
	n := 0
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: 1000, NextPageToken: token,
			Query: "ExecutionStatus = 'Running'"})
		if err != nil {
			return 0, err
		}
		for _, e := range resp.Executions {
			if e.GetType().GetName() != temporalresearch.WorkflowName {
				continue
			}
			d, err := c.DescribeWorkflowExecution(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
			if err != nil {
				continue // finished meanwhile
			}
			for _, pa := range d.GetPendingActivities() {
				if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && strings.HasPrefix(pa.GetLastWorkerIdentity(), prefix) {
					n++
				}
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return n, nil
		}
	}
}

func durations(args []string) error {
	fs := flag.NewFlagSet("durations", flag.ContinueOnError)
	hostPort := fs.String("temporal", "127.0.0.1:7233", "Temporal frontend")
	namespace := fs.String("namespace", "default", "namespace")
	question := fs.String("question", "", "the runs' question")
	blobDir := fs.String("blob-dir", "", "the workers' --blob-dir")
	if err := fs.Parse(args); err != nil {
		return err
	}
	codec := &temporalgraph.Codec{}
	if *blobDir != "" {
		codec.Store = temporalgraph.DirStore(*blobDir)
	}
	dataConverter = temporalgraph.DataConverter(codec)
	c, err := client.Dial(client.Options{HostPort: *hostPort, Namespace: *namespace, DataConverter: dataConverter, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type run struct {
		start time.Time
		d     time.Duration
	}
	var runs []run
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: *namespace, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return err
		}
		for _, e := range resp.Executions {
			if e.GetType().GetName() != temporalresearch.WorkflowName || e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				continue
			}
			it := c.GetWorkflowHistory(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			ev, err := it.Next()
			if err != nil {
				return err
			}
			var req temporalresearch.Request
			if err := dataConverter.FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &req); err != nil || req.Question != *question {
				continue
			}
			runs = append(runs, run{e.GetStartTime().AsTime(), e.GetCloseTime().AsTime().Sub(e.GetStartTime().AsTime())})
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("no completed run of %q", *question)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
	ds := make([]float64, len(runs))
	texts := make([]string, len(runs))
	for i, r := range runs {
		ds[i] = r.d.Seconds()
		texts[i] = fmt.Sprintf("%.3f", ds[i])
	}
	sort.Float64s(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	fmt.Printf("on the server (workflow start to close, s): %s; median %.3f\n", strings.Join(texts, " "), med)
	return nil
}

func freePort() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

// ---------------------------------------------------------------- reports

var (
	// citationRe finds the numbered citations of an answer.
	citationRe = regexp.MustCompile(`\[(\d+)\]\((https?://[^)\s]+)\)`)
	// sourceLineRe finds the entries of the Sources list.
	sourceLineRe = regexp.MustCompile(`(?m)^(\d+)\. \[[^\n]*\]\((https?://[^)\s]+)\)$`)
)

func reports(args []string) error {
	fs := flag.NewFlagSet("reports", flag.ContinueOnError)
	out := fs.String("out", "", "directory of the reports")
	questionsFile := fs.String("questions", "", "the questions, one a line")
	urlsEndpoint := fs.String("urls", "", "the fake's /_fake/urls")
	summaryName := fs.String("summary", "summary", "base name of the summary file(s), not a report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *questionsFile == "" || *urlsEndpoint == "" {
		return errors.New("reports needs --out, --questions and --urls")
	}
	questions, err := readLines(*questionsFile)
	if err != nil {
		return err
	}
	served, err := servedURLs(*urlsEndpoint)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(*out, "*.md"))
	if err != nil {
		return err
	}
	var problems []string
	byQuestion := map[string][]string{}
	nReports, nCites, nSources := 0, 0, 0
	for _, f := range files {
		if strings.HasPrefix(strings.ToLower(filepath.Base(f)), *summaryName) {
			continue
		}
		nReports++
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		md := string(data)
		name := filepath.Base(f)
		i := strings.Index(md, "\n## Sources\n")
		if i < 0 {
			problems = append(problems, name+": no Sources list")
			continue
		}
		answer, sources := md[:i], md[i:]
		matched := ""
		for _, q := range questions {
			if strings.Contains(answer, fmt.Sprintf("%q", q)) {
				matched = q
				break
			}
		}
		if matched == "" {
			problems = append(problems, name+": the answer names none of the questions")
		} else {
			byQuestion[matched] = append(byQuestion[matched], name)
		}
		entries := sourceLineRe.FindAllStringSubmatch(sources, -1)
		if len(entries) == 0 {
			problems = append(problems, name+": empty Sources list")
		}
		byNumber := map[string]string{}
		for k, e := range entries {
			if e[1] != fmt.Sprint(k+1) {
				problems = append(problems, fmt.Sprintf("%s: Sources entry %d is numbered %s", name, k+1, e[1]))
			}
			byNumber[e[1]] = e[2]
			if !served[e[2]] {
				problems = append(problems, fmt.Sprintf("%s: source %s was never handed out by the fake", name, e[2]))
			}
		}
		nSources += len(entries)
		cites := citationRe.FindAllStringSubmatch(answer, -1)
		if len(cites) == 0 {
			problems = append(problems, name+": the answer cites nothing")
		}
		nCites += len(cites)
		for _, c := range cites {
			if u, ok := byNumber[c[1]]; !ok || u != c[2] {
				problems = append(problems, fmt.Sprintf("%s: citation [%s](%s) does not match its Sources entry", name, c[1], c[2]))
			}
			if !served[c[2]] {
				problems = append(problems, fmt.Sprintf("%s: cited %s, which the fake never handed out", name, c[2]))
			}
		}
		for _, bad := range []string{"evil.example", "vertexaisearch.cloud.google.com/id/"} {
			if strings.Contains(md, bad) {
				problems = append(problems, fmt.Sprintf("%s: %s survived into the report", name, bad))
			}
		}
	}
	for _, q := range questions {
		switch n := len(byQuestion[q]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("no report answers %q", q))
		case n > 1:
			problems = append(problems, fmt.Sprintf("%d reports answer %q: %s", n, q, strings.Join(byQuestion[q], ", ")))
		}
	}
	fmt.Printf("reports: %d Markdown reports for %d questions; %d citations and %d Sources entries checked against the %d URLs the fake handed out\n",
		nReports, len(questions), nCites, nSources, len(served))
	problems = append(problems, documents(*out, *summaryName, questions, served)...)
	problems = append(problems, summary(*out, *summaryName, questions)...)
	return verdict("reports", problems)
}

// documents checks the JSON reports (research --format json) beside the
// Markdown ones, if any: complete, the right question, an answer, sources
// the fake served.
func documents(dir, summaryName string, questions []string, served map[string]bool) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	asked := map[string]bool{}
	for _, q := range questions {
		asked[q] = true
	}
	var problems []string
	n := 0
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(strings.ToLower(name), summaryName) {
			continue
		}
		n++
		var doc struct {
			Question   string `json:"question"`
			Answer     string `json:"answer"`
			Incomplete bool   `json:"incomplete"`
			Sources    []struct {
				URL string `json:"url"`
			} `json:"sources"`
		}
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &doc)
		}
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		case !asked[doc.Question]:
			problems = append(problems, fmt.Sprintf("%s: question %q was not asked", name, doc.Question))
		case strings.TrimSpace(doc.Answer) == "":
			problems = append(problems, name+": no answer")
		case doc.Incomplete:
			problems = append(problems, name+": marked incomplete")
		case len(doc.Sources) == 0:
			problems = append(problems, name+": no sources")
		}
		for _, src := range doc.Sources {
			if !served[src.URL] {
				problems = append(problems, fmt.Sprintf("%s: source %s was never handed out by the fake", name, src.URL))
			}
		}
	}
	if n > 0 {
		fmt.Printf("reports: %d JSON reports\n", n)
		if n != len(questions) {
			problems = append(problems, fmt.Sprintf("%d JSON reports for %d questions", n, len(questions)))
		}
	}
	return problems
}

// summary checks research batch's summary.json, if there is one: every
// question listed once, done, with its report.
func summary(dir, summaryName string, questions []string) []string {
	data, err := os.ReadFile(filepath.Join(dir, summaryName+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{err.Error()}
	}
	var sum struct {
		Counts    map[string]int `json:"counts"`
		Questions []struct {
			Question string `json:"question"`
			Status   string `json:"status"`
			Report   string `json:"report"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		return []string{summaryName + ".json: " + err.Error()}
	}
	var problems []string
	done := 0
	status := map[string]string{}
	for _, q := range sum.Questions {
		if _, dup := status[q.Question]; dup {
			problems = append(problems, fmt.Sprintf("%s.json lists %q twice", summaryName, q.Question))
		}
		status[q.Question] = q.Status
		if q.Status != "done" {
			continue
		}
		done++
		if _, err := os.Stat(filepath.Join(dir, q.Report)); q.Report == "" || err != nil {
			problems = append(problems, fmt.Sprintf("%s.json: the report of %q, %q, is missing", summaryName, q.Question, q.Report))
		}
	}
	for _, q := range questions {
		if st := status[q]; st != "done" {
			problems = append(problems, fmt.Sprintf("%s.json: %q is %q, not done", summaryName, q, st))
		}
	}
	if sum.Counts["total"] != len(questions) || sum.Counts["done"] != len(questions) {
		problems = append(problems, fmt.Sprintf("%s.json counts %v, want %d done of %d", summaryName, sum.Counts, len(questions), len(questions)))
	}
	fmt.Printf("summary: %d questions listed, %d done (counts %v)\n", len(sum.Questions), done, sum.Counts)
	return problems
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

func servedURLs(endpoint string) (map[string]bool, error) {
	resp, err := http.Get(endpoint)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", endpoint, resp.Status)
	}
	var urls []string
	if err := json.NewDecoder(resp.Body).Decode(&urls); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(urls))
	for _, u := range urls {
		out[u] = true
	}
	return out, nil
}

// verdict prints the problems and fails when there are any.
func verdict(what string, problems []string) error {
	if len(problems) == 0 {
		fmt.Printf("%s: OK\n", what)
		return nil
	}
	const show = 20
	for i, p := range problems {
		if i == show {
			fmt.Printf("  … and %d more\n", len(problems)-show)
			break
		}
		fmt.Println("  FAIL", p)
	}
	return fmt.Errorf("%s: %d problems", what, len(problems))
}

// ---------------------------------------------------------------- history

// dataConverter decodes the runs' payloads, as the workers encode them.
var dataConverter converter.DataConverter

// activity is one scheduled activity of a run's history.
type activity struct {
	id, typ   string
	scheduled int64 // event ID
	attempt   int32 // of the Started event (the last attempt)
	completed int
	closed    string // how it closed: completed, failed, timed out, canceled
	identity  string // the worker that completed it
	lastFail  string // why the attempt before the last failed
}

// node is the graph node of a task activity ID "s3-t0-web_research".
func (a *activity) node() string {
	parts := strings.SplitN(a.id, "-", 3)
	if len(parts) < 3 || !strings.HasPrefix(parts[0], "s") || !strings.HasPrefix(parts[1], "t") {
		return ""
	}
	n := parts[2]
	if i := strings.LastIndex(n, "-r"); i > 0 {
		n = n[:i]
	}
	return n
}

// runHistory is what the check keeps of one run.
type runHistory struct {
	id, question, status string
	activities           []*activity
	wfTaskFailed         int
	wfTaskTimedOut       int
}

func history(args []string) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	hostPort := fs.String("temporal", "127.0.0.1:7233", "Temporal frontend")
	namespace := fs.String("namespace", "default", "namespace")
	runs := fs.Int("runs", 0, "research runs expected")
	countFile := fs.String("count-file", "", "the fake's --count-file")
	blobDir := fs.String("blob-dir", "", "the workers' --blob-dir, to decode offloaded payloads")
	wait := fs.Duration("wait", time.Minute, "how long to wait for the runs to be listed")
	verbose := fs.Bool("v", false, "list every re-executed activity")
	if err := fs.Parse(args); err != nil {
		return err
	}
	codec := &temporalgraph.Codec{}
	if *blobDir != "" {
		codec.Store = temporalgraph.DirStore(*blobDir)
	}
	dataConverter = temporalgraph.DataConverter(codec)
	c, err := client.Dial(client.Options{HostPort: *hostPort, Namespace: *namespace,
		DataConverter: dataConverter,
		Logger:        quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The runs: every research workflow on the server (a fresh one).
	var execs []*struct{ id, runID, status string }
	deadline := time.Now().Add(*wait)
	for {
		execs = execs[:0]
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: *namespace, PageSize: 1000, NextPageToken: token})
			if err != nil {
				return fmt.Errorf("listing the runs: %w", err)
			}
			for _, e := range resp.Executions {
				if e.GetType().GetName() != temporalresearch.WorkflowName {
					continue
				}
				execs = append(execs, &struct{ id, runID, status string }{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), e.GetStatus().String()})
			}
			if token = resp.NextPageToken; len(token) == 0 {
				break
			}
		}
		if *runs == 0 || len(execs) >= *runs || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}

	var problems []string
	if *runs > 0 && len(execs) != *runs {
		problems = append(problems, fmt.Sprintf("%d research runs on the server, want %d", len(execs), *runs))
	}
	var hs []*runHistory
	for _, e := range execs {
		h, err := readHistory(ctx, c, e.id, e.runID)
		if err != nil {
			return fmt.Errorf("run %s: %w", e.id, err)
		}
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].id < hs[j].id })

	type reran struct {
		run *runHistory
		a   *activity
	}
	var (
		completedRuns, activities, completions, dupCompletions, rescheduled, wfFailed, wfTimedOut int
		reExecuted                                                                                []reran
		byWorker                                                                                  = map[string]int{}
		byQuestion                                                                                = map[string]*runHistory{}
	)
	for _, h := range hs {
		if h.status == "completed" {
			completedRuns++
		} else {
			problems = append(problems, fmt.Sprintf("run %s: %s", h.id, h.status))
		}
		byQuestion[qhash(h.question)] = h
		wfFailed += h.wfTaskFailed
		wfTimedOut += h.wfTaskTimedOut
		done := map[string]int64{} // activity ID → the Scheduled event it completed
		for _, a := range h.activities {
			activities++
			if prev, ok := done[a.id]; ok {
				rescheduled++
				problems = append(problems, fmt.Sprintf("run %s: activity %s scheduled again (event %d) after it completed (event %d)", h.id, a.id, a.scheduled, prev))
			}
			if a.completed > 1 {
				dupCompletions += a.completed - 1
				problems = append(problems, fmt.Sprintf("run %s: activity %s completed %d times", h.id, a.id, a.completed))
			}
			if a.completed > 0 {
				completions++
				done[a.id] = a.scheduled
				byWorker[a.identity]++
			} else {
				problems = append(problems, fmt.Sprintf("run %s: activity %s %s", h.id, a.id, a.closed))
			}
			if a.attempt > 1 {
				reExecuted = append(reExecuted, reran{h, a})
			}
		}
	}
	fmt.Printf("history: %d research runs, %d completed; %d activities scheduled, %d completed, duplicate completions %d, rescheduled after completion %d\n",
		len(hs), completedRuns, activities, completions, dupCompletions, rescheduled)
	workers := make([]string, 0, len(byWorker))
	for w := range byWorker {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	for _, w := range workers {
		fmt.Printf("history: %d activities completed by worker %s\n", byWorker[w], w)
	}
	fmt.Printf("history: workflow tasks failed %d, timed out %d (a workflow task on a lost worker times out and runs on another)\n", wfFailed, wfTimedOut)
	fmt.Printf("history: re-executed in-flight activities %d (attempt > 1: the attempt before was lost)\n", len(reExecuted))
	reasons := map[string]int{}
	for _, r := range reExecuted {
		reasons[r.a.lastFail]++
	}
	for why, n := range reasons {
		fmt.Printf("history:   %d after: %s\n", n, why)
	}
	if *verbose {
		for _, r := range reExecuted {
			fmt.Printf("history:   run %s activity %s (%s) attempt %d, completed by %s\n", r.run.id, r.a.id, r.a.typ, r.a.attempt, r.a.identity)
		}
	}

	repeated, explained := -1, -1
	if *countFile != "" {
		p, r, e, err := checkRepeats(*countFile, byQuestion)
		if err != nil {
			return err
		}
		problems = append(problems, p...)
		repeated, explained = r, e
	}
	// One line for scripts.
	fmt.Printf("history-figures: runs=%d completed=%d activities=%d reexecuted=%d dup_completions=%d rescheduled=%d repeated_prompts=%d explained_repeats=%d workers=%d\n",
		len(hs), completedRuns, activities, len(reExecuted), dupCompletions, rescheduled, repeated, explained, len(byWorker))
	return verdict("history", problems)
}

// readHistory reads one run's history.
func readHistory(ctx context.Context, c client.Client, id, runID string) (*runHistory, error) {
	h := &runHistory{id: id, status: "open"}
	byEvent := map[int64]*activity{}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			var req temporalresearch.Request
			if in := ev.GetWorkflowExecutionStartedEventAttributes().GetInput(); in != nil {
				if err := dataConverter.FromPayloads(in, &req); err != nil {
					return nil, fmt.Errorf("decoding the run's input: %w", err)
				}
			}
			h.question = req.Question
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			at := ev.GetActivityTaskScheduledEventAttributes()
			a := &activity{id: at.GetActivityId(), typ: at.GetActivityType().GetName(), scheduled: ev.GetEventId(), closed: "never closed"}
			byEvent[a.scheduled] = a
			h.activities = append(h.activities, a)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			at := ev.GetActivityTaskStartedEventAttributes()
			if a := byEvent[at.GetScheduledEventId()]; a != nil {
				a.attempt = at.GetAttempt()
				if f := at.GetLastFailure(); f != nil {
					a.lastFail = failureText(f.GetMessage(), f.GetTimeoutFailureInfo().GetTimeoutType().String())
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			at := ev.GetActivityTaskCompletedEventAttributes()
			if a := byEvent[at.GetScheduledEventId()]; a != nil {
				a.completed++
				a.closed = "completed"
				a.identity = at.GetIdentity()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			if a := byEvent[ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()]; a != nil {
				a.closed = "failed: " + ev.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if a := byEvent[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()]; a != nil {
				a.closed = "timed out: " + ev.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			if a := byEvent[ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()]; a != nil {
				a.closed = "canceled"
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			h.wfTaskFailed++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			h.wfTaskTimedOut++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			h.status = "completed"
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			h.status = "failed: " + ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage()
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
			h.status = "timed out"
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			h.status = "canceled"
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
			h.status = "terminated"
		}
	}
	return h, nil
}

func failureText(msg, timeoutType string) string {
	if timeoutType != "" && timeoutType != enumspb.TIMEOUT_TYPE_UNSPECIFIED.String() {
		return "timeout " + timeoutType
	}
	return msg
}

// qhash is the fake's hash of a question (the middle of its keys).
func qhash(q string) string {
	sum := sha256.Sum256([]byte(q + "\x00"))
	return hex.EncodeToString(sum[:])[:12]
}

// nodeOfKind is the graph node that sends the fake's kind of prompt.
var nodeOfKind = map[string]string{
	"queries":    "generate_query",
	"summary":    "web_research",
	"reflection": "reflection",
	"answer":     "finalize_answer",
}

// checkRepeats reads the fake's count file: every prompt sent more than
// once must come from a re-executed activity of its run's node.
func checkRepeats(path string, byQuestion map[string]*runHistory) (problems []string, repeated, explained int, err error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, 0, 0, err
	}
	count := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, 0, 0, fmt.Errorf("%s: bad line %q", path, l)
		}
		count[f[2]]++
	}
	type runKind struct {
		h    *runHistory
		kind string
	}
	repeats := map[runKind]int{} // calls beyond the first of each prompt
	for key, n := range count {
		if n < 2 {
			continue
		}
		repeated += n - 1
		parts := strings.Split(key, "/")
		if len(parts) != 3 {
			return nil, 0, 0, fmt.Errorf("%s: bad key %q", path, key)
		}
		h := byQuestion[parts[1]]
		if h == nil {
			problems = append(problems, fmt.Sprintf("prompt %s sent %d times, for no run on the server", key, n))
			continue
		}
		repeats[runKind{h, parts[0]}] += n - 1
	}
	for rk, n := range repeats {
		node := nodeOfKind[rk.kind]
		reran := 0
		for _, a := range rk.h.activities {
			if node != "" && a.node() == node && a.attempt > 1 {
				reran += int(a.attempt) - 1
			}
		}
		if reran < n {
			problems = append(problems, fmt.Sprintf("run %s: %d repeated %s prompts, but its %s activities re-ran only %d times: a finished task ran again",
				rk.h.id, n, rk.kind, node, reran))
			continue
		}
		explained += n
	}
	fmt.Printf("model calls: %d, distinct prompts %d, repeated %d, of which explained by a re-executed in-flight activity of the same run and node: %d\n",
		len(lines), len(count), repeated, explained)
	return problems, repeated, explained, nil
}
