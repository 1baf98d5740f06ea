package agentserver

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// The documents of the API, as @langchain/langgraph-sdk's schema.d.ts
// names them.

// Metadata is a metadata object: keys to JSON values.
type Metadata map[string]json.RawMessage

type assistantOut struct {
	AssistantID string          `json:"assistant_id"`
	GraphID     string          `json:"graph_id"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Config      json.RawMessage `json:"config"`
	Context     json.RawMessage `json:"context"`
	Metadata    Metadata        `json:"metadata"`
	Version     int             `json:"version"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

type threadOut struct {
	ThreadID       string                    `json:"thread_id"`
	CreatedAt      time.Time                 `json:"created_at"`
	UpdatedAt      time.Time                 `json:"updated_at"`
	StateUpdatedAt time.Time                 `json:"state_updated_at"`
	Metadata       Metadata                  `json:"metadata"`
	Status         string                    `json:"status"`
	Values         json.RawMessage           `json:"values"`
	Interrupts     map[string][]interruptOut `json:"interrupts"`
	Config         json.RawMessage           `json:"config"`
}

type interruptOut struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

type checkpointRef struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
	// CheckpointMap names, for a subgraph's checkpoint, the checkpoint of
	// each namespace above it and its own (LangGraph's checkpoint_map).
	CheckpointMap map[string]string `json:"checkpoint_map,omitempty"`
}

type checkpointMeta struct {
	Source  string            `json:"source"`
	Step    int               `json:"step"`
	RunID   string            `json:"run_id,omitempty"`
	Parents map[string]string `json:"parents"`
}

type stateTask struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Error      *string         `json:"error"`
	Interrupts []interruptOut  `json:"interrupts"`
	Checkpoint *checkpointRef  `json:"checkpoint"`
	State      json.RawMessage `json:"state"`
	Result     json.RawMessage `json:"result,omitempty"`
}

type threadState struct {
	Values           json.RawMessage `json:"values"`
	Next             []string        `json:"next"`
	Tasks            []stateTask     `json:"tasks"`
	Checkpoint       checkpointRef   `json:"checkpoint"`
	Metadata         checkpointMeta  `json:"metadata"`
	CreatedAt        string          `json:"created_at"`
	ParentCheckpoint *checkpointRef  `json:"parent_checkpoint"`
	Interrupts       []interruptOut  `json:"interrupts"`
}

// The statuses of runs and threads.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"

	threadIdle        = "idle"
	threadBusy        = "busy"
	threadInterrupted = "interrupted"
	threadError       = "error"
)

// command is a run's command: {resume, update, goto}.
type command struct {
	Resume json.RawMessage `json:"resume,omitempty"`
	Update json.RawMessage `json:"update,omitempty"`
	Goto   json.RawMessage `json:"goto,omitempty"`
}

// gotos reads goto: a node name, a list of them, or Send-like objects
// {node}.
func (c *command) gotos() []string {
	if len(c.Goto) == 0 || string(c.Goto) == "null" {
		return nil
	}
	var one string
	if json.Unmarshal(c.Goto, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(c.Goto, &many) != nil {
		return nil
	}
	var out []string
	for _, m := range many {
		var s string
		var send struct {
			Node string `json:"node"`
		}
		if json.Unmarshal(m, &s) == nil {
			out = append(out, s)
		} else if json.Unmarshal(m, &send) == nil && send.Node != "" {
			out = append(out, send.Node)
		}
	}
	return out
}

// runCreate is the body of the run-creating endpoints.
type runCreate struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *command        `json:"command"`
	Config      *struct {
		Configurable   map[string]json.RawMessage `json:"configurable"`
		RecursionLimit int                        `json:"recursion_limit"`
		Tags           []string                   `json:"tags"`
	} `json:"config"`
	Context           map[string]json.RawMessage `json:"context"`
	Metadata          Metadata                   `json:"metadata"`
	StreamMode        json.RawMessage            `json:"stream_mode"`
	StreamSubgraphs   bool                       `json:"stream_subgraphs"`
	StreamResumable   bool                       `json:"stream_resumable"`
	Checkpoint        *checkpointRef             `json:"checkpoint"`
	CheckpointID      string                     `json:"checkpoint_id"`
	InterruptBefore   json.RawMessage            `json:"interrupt_before"`
	InterruptAfter    json.RawMessage            `json:"interrupt_after"`
	MultitaskStrategy string                     `json:"multitask_strategy"`
	OnDisconnect      string                     `json:"on_disconnect"`
	OnCompletion      string                     `json:"on_completion"`
	IfNotExists       string                     `json:"if_not_exists"`
	Durability        string                     `json:"durability"`
	// Accepted and not used: feedback, webhooks, delays.
	FeedbackKeys     json.RawMessage `json:"feedback_keys"`
	Webhook          json.RawMessage `json:"webhook"`
	AfterSeconds     json.RawMessage `json:"after_seconds"`
	CheckpointDuring json.RawMessage `json:"checkpoint_during"`
}

// runSpec is what a Graph needs to execute a run.
type runSpec struct {
	thread, runID   string
	checkpointID    string
	input           json.RawMessage
	command         *command
	interruptBefore []string
	interruptAfter  []string
	recursionLimit  int
	durability      graph.DurabilityMode
	config          RunConfig
	subgraphs       bool // stream_subgraphs
	// modes are the stream modes the run records: run builds the events
	// of the others not at all (a state's values for each step, say).
	modes []string
}

// wants reports whether the run records any of modes.
func (r runSpec) wants(modes ...string) bool {
	for _, m := range modes {
		if slices.Contains(r.modes, m) {
			return true
		}
	}
	return false
}

// durabilities are the run's durability modes by name ("": the default,
// sync).
var durabilities = map[string]graph.DurabilityMode{"": graph.DurabilitySync, "sync": graph.DurabilitySync,
	"async": graph.DurabilityAsync, "exit": graph.DurabilityExit}

// runEnd is how a run ended: its final values, the interrupts it waits on,
// or its error (bad: the request was at fault).
type runEnd struct {
	values     json.RawMessage
	interrupts []interruptOut
	err        error
	bad        bool
}

// The stream modes.
const (
	modeValues      = "values"
	modeUpdates     = "updates"
	modeMessages    = "messages"
	modeCustom      = "custom"
	modeTasks       = "tasks"
	modeCheckpoints = "checkpoints"
	modeDebug       = "debug"
)

// streamEvent is one event of a run's stream before it is encoded.
type streamEvent struct {
	mode string
	ns   string // a subgraph's run: its namespace, the event being "mode|ns"
	data any
	step int // checkpoints: the step whose checkpoint to read (data nil: the run's own) or described (data: a subgraph's)
}

// name is the event's SSE name: its mode, or "mode|namespace" for an
// event of a subgraph's run.
func (ev streamEvent) name(mode string) string {
	if ev.ns == "" {
		return mode
	}
	return mode + "|" + ev.ns
}
