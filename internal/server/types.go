package server

import (
	"encoding/json"
	"time"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/research"
)

// The API's documents. The OpenAPI document at /openapi.json is generated
// from these types and the route table, so the two cannot drift apart.

// Health is GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Running int    `json:"running"`
	Queued  int    `json:"queued"`
}

// Info is GET /info: what a client may choose.
type Info struct {
	Version       string            `json:"version"`
	Auth          bool              `json:"auth"`
	Kinds         []runstore.Kind   `json:"kinds"`
	Efforts       []research.Effort `json:"efforts"`
	DefaultEffort string            `json:"default_effort"`
	Backends      []string          `json:"backends"`
	// DefaultBackend is what a run without a backend uses.
	DefaultBackend string   `json:"default_backend"`
	Models         []string `json:"models"`
	// MaxQuestion is the longest question or task, in characters.
	MaxQuestion int `json:"max_question"`
}

// Thread is a conversation: the runs on one graph thread.
type Thread struct {
	ID    string        `json:"thread_id"`
	Kind  runstore.Kind `json:"kind"`
	Title string        `json:"title"`
	// Status is the state of its newest run: idle (none, or done), busy
	// (queued or running), needs-input, interrupted or failed.
	Status   string    `json:"status"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	RunCount int       `json:"run_count"`
}

// The statuses of a thread.
const (
	ThreadIdle        = "idle"
	ThreadBusy        = "busy"
	ThreadNeedsInput  = "needs-input"
	ThreadInterrupted = "interrupted"
	ThreadFailed      = "failed"
)

// ThreadDetail is GET /threads/{thread_id}.
type ThreadDetail struct {
	Thread
	// Values is the graph state of the thread's newest checkpoint (null
	// when it has none).
	Values json.RawMessage `json:"values"`
	Runs   []Run           `json:"runs"`
}

// ThreadList is a page of threads, newest first.
type ThreadList struct {
	Threads []Thread `json:"threads"`
	// NextOffset is the offset of the next page, absent at the end.
	NextOffset *int `json:"next_offset,omitempty"`
}

// CreateThread is the body of POST /threads (no field is needed).
type CreateThread struct{}

// RunRequest is the body of POST /threads/{thread_id}/runs.
type RunRequest struct {
	// Kind is research (the default) or agent.
	Kind runstore.Kind `json:"kind,omitempty"`
	// Input is the question, or the agent's task.
	Input string `json:"input"`
	// Effort is low, medium or high (research).
	Effort string `json:"effort,omitempty"`
	// Review pauses the run before each round of searches for the
	// queries to be approved or edited (research).
	Review bool `json:"review,omitempty"`
	// Backend is one of GET /info's backends (research).
	Backend string `json:"backend,omitempty"`
	// Models are model specs by role (query, research, reflection, answer;
	// "agent" for an agent), among GET /info's models.
	Models map[string]string `json:"models,omitempty"`
}

// ResumeRequest is the body of POST …/runs/{run_id}/resume.
type ResumeRequest struct {
	// Answer answers the interrupt the run waits on: for a review "ok",
	// "stop", queries separated by ";", or {"queries":[…],"stop":false};
	// for an agent's question the answer text. Absent to resume an
	// interrupted run.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// Run is one run of a thread.
type Run struct {
	ID       string          `json:"run_id"`
	ThreadID string          `json:"thread_id"`
	Kind     runstore.Kind   `json:"kind"`
	Input    string          `json:"input"`
	Status   runstore.Status `json:"status"`
	Created  time.Time       `json:"created"`
	Updated  time.Time       `json:"updated"`
	Ended    *time.Time      `json:"ended,omitempty"`
	Error    string          `json:"error,omitempty"`
	Tokens   int64           `json:"tokens"`
	Calls    int             `json:"llm_calls"`
	// CostUSD is what the run's model calls cost so far, in US dollars, at
	// the server's prices; null when it is unknown (a model of the run has
	// no known price), never 0 for unknown — as research runs --format json.
	CostUSD *float64 `json:"cost_usd"`
	// DurationMS is how long it ran, so far while it runs.
	DurationMS int64       `json:"duration_ms"`
	Settings   RunSettings `json:"settings"`
	// Interrupt is what a run with status needs-input waits for.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// Report is the report (research) or result (agent) document, once
	// there is one (GET of one run only).
	Report json.RawMessage `json:"report,omitempty"`
}

// RunSettings are a run's choices.
type RunSettings struct {
	Effort  string            `json:"effort,omitempty"`
	Backend string            `json:"backend,omitempty"`
	Models  map[string]string `json:"models"`
	Queries int               `json:"queries,omitempty"`
	Loops   int               `json:"loops,omitempty"`
	Review  bool              `json:"review,omitempty"`
}

// RunList is a list of runs.
type RunList struct {
	Runs       []Run `json:"runs"`
	NextOffset *int  `json:"next_offset,omitempty"`
}

// Interrupt is what a paused run waits for.
type Interrupt struct {
	// Kind is review (a research run's queries) or question (an agent's).
	Kind     string                  `json:"kind"`
	Review   *research.ReviewRequest `json:"review,omitempty"`
	Question string                  `json:"question,omitempty"`
}

// The kinds of interrupt.
const (
	InterruptReview   = "review"
	InterruptQuestion = "question"
)

// History is GET /threads/{thread_id}/history.
type History struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// Checkpoint is one stored step of a thread.
type Checkpoint struct {
	ID      string    `json:"checkpoint_id"`
	Parent  string    `json:"parent_id,omitempty"`
	Step    int       `json:"step"`
	RunID   string    `json:"run_id,omitempty"`
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
	// Next are the nodes of the step that follows; empty when the run
	// had finished.
	Next []string `json:"next"`
	// Ran are the nodes that ran in the step that led here.
	Ran []string `json:"ran"`
}

// Activity is the data of an activity event: one timeline entry.
type Activity struct {
	// Kind is a research activity (generating_queries, queries, searching,
	// searched, reflecting, reflected, finalizing, answered, failed,
	// review) or an agent step (agent_think, agent_act, agent_nudge,
	// agent_done).
	Kind string `json:"kind"`
	// Text is the timeline line the CLI prints ("" for entries that only
	// say what is in progress).
	Text      string `json:"text"`
	ElapsedMS int64  `json:"elapsed_ms"`
	// Tokens are the tokens spent so far.
	Tokens     int         `json:"tokens"`
	Node       string      `json:"node,omitempty"`
	Step       int         `json:"step,omitempty"`
	Queries    []string    `json:"queries,omitempty"`
	Query      string      `json:"query,omitempty"`
	Sources    int         `json:"sources,omitempty"`
	Labels     []string    `json:"labels,omitempty"`
	Reflection *Reflection `json:"reflection,omitempty"`
	Loop       int         `json:"loop,omitempty"`
	Cited      int         `json:"cited,omitempty"`
	Dropped    int         `json:"dropped,omitempty"`
	Error      string      `json:"error,omitempty"`
	Thought    string      `json:"thought,omitempty"`
	Calls      []ToolCall  `json:"calls,omitempty"`
	Tool       string      `json:"tool,omitempty"`
	Output     string      `json:"output,omitempty"`
	Failed     bool        `json:"failed,omitempty"`
	DurationMS int64       `json:"duration_ms,omitempty"`
	Status     string      `json:"status,omitempty"`
}

// Reflection is a reflection's verdict.
type Reflection struct {
	IsSufficient    bool     `json:"is_sufficient"`
	KnowledgeGap    string   `json:"knowledge_gap"`
	FollowUpQueries []string `json:"follow_up_queries"`
}

// ToolCall is a tool an agent called, with its arguments as JSON text.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// StateData is the data of a state event: the state after a step, in
// brief.
type StateData struct {
	Step   int         `json:"step"`
	Nodes  []string    `json:"nodes"`
	Values StateValues `json:"values"`
}

// StateValues are the research state's values a client follows.
type StateValues struct {
	Queries  []string `json:"queries"`
	Loops    int      `json:"loops"`
	Findings int      `json:"findings"`
	Sources  int      `json:"sources"`
	Answered bool     `json:"answered"`
}

type statusData struct {
	Status runstore.Status `json:"status"`
	Error  string          `json:"error,omitempty"`
}

type endData struct {
	Status runstore.Status `json:"status"`
}

type tokenData struct {
	Text string `json:"text"`
	// Restart says the answer's stream broke off and is being written
	// again: drop the text shown so far.
	Restart bool `json:"restart,omitempty"`
}

// errorBody is every error response: {"error":{"code","message"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The codes of errors.
const (
	codeBadRequest   = "bad_request"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeNotFound     = "not_found"
	codeConflict     = "conflict"
	codeTooLarge     = "too_large"
	codeUnsupported  = "unsupported_media_type"
	codeRateLimited  = "rate_limited"
	codeUnavailable  = "unavailable"
	codeInternal     = "internal"
	codeRunFailed    = "run_failed"
)
