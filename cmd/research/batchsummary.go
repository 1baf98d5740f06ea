package main

import "time"

// The layout of research batch's summary (summary.json, summary.md): its
// statuses and rows. It is here, in both research and research-temporal,
// for the end-to-end tests that read it; the batch itself is batch.go.

// Statuses of a batch question.
const (
	batchDone       = "done"
	batchFailed     = "failed"
	batchCancelled  = "cancelled"
	batchTerminated = "terminated"
	batchTimedOut   = "timed_out"
	batchRunning    = "running" // still running on Temporal when the batch stopped
	batchPending    = "pending" // not submitted when the batch stopped
)

// How a batch question's result was had.
const (
	howKept     = "kept"     // its report was already in the directory
	howStarted  = "started"  // its run was started
	howAttached = "attached" // its run was running, and was followed again
	howFetched  = "fetched"  // its run had finished, and its report was fetched
)

// batchRow is a question's line of the summary.
type batchRow struct {
	N          int    `json:"n"`
	Line       int    `json:"line"`
	Question   string `json:"question"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id,omitempty"`
	Status     string `json:"status"`
	How        string `json:"how,omitempty"`
	Error      string `json:"error,omitempty"`
	Tokens     int    `json:"tokens"`
	// CostUSD is what the run's model calls cost at this configuration's
	// prices, for the models the workers used; null when a price is
	// unknown, or there is no report.
	CostUSD *float64 `json:"cost_usd"`
	// DurationMS is how long the run took on Temporal (its start to its
	// close), or as measured here.
	DurationMS      float64 `json:"duration_ms"`
	SourcesCited    int     `json:"sources_cited"`
	SourcesGathered int     `json:"sources_gathered"`
	// Report and Document are the file names of the Markdown report and
	// its JSON document in the directory, when written.
	Report   string `json:"report,omitempty"`
	Document string `json:"document,omitempty"`
}

// failed reports whether the row counts as a failure.
func (r batchRow) failed() bool {
	switch r.Status {
	case batchFailed, batchCancelled, batchTerminated, batchTimedOut:
		return true
	}
	return false
}

// batchCounts count the questions by outcome.
type batchCounts struct {
	Total   int `json:"total"`
	Done    int `json:"done"`
	Failed  int `json:"failed"` // failed, cancelled, terminated, timed out
	Running int `json:"running"`
	Pending int `json:"pending"`
}

// batchSummarySchema names summary.json's layout.
const batchSummarySchema = "deepgraph.research.batch/v1"

// Summary file names.
const (
	batchSummaryMD   = "summary.md"
	batchSummaryJSON = "summary.json"
)

// batchSummary is summary.json.
type batchSummary struct {
	Schema    string      `json:"schema"`
	File      string      `json:"file"`
	Address   string      `json:"temporal"`
	Namespace string      `json:"namespace"`
	TaskQueue string      `json:"task_queue"`
	Updated   time.Time   `json:"updated"`
	Counts    batchCounts `json:"counts"`
	// CostUSD is the cost of every report written (the rows' cost_usd);
	// null when one of them is unknown.
	CostUSD   *float64   `json:"cost_usd"`
	Questions []batchRow `json:"questions"`
}
