package temporalgraph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
)

// Graph is a compiled graph made runnable on Temporal: a workflow type that
// runs the graph's steps, and an activity type that runs its tasks. Workers
// register it (Register); clients start runs of it (Start). It is safe for
// concurrent use.
type Graph[S any] struct {
	name        string
	c           *graph.Compiled[S]
	opts        Options[S]
	fingerprint string
}

// Options tune a Graph. The zero value is ready to use.
type Options[S any] struct {
	// Version is the version of the graph's workflow code, part of its
	// workflow type's name (default "v1"). Give a new version when a change
	// alters what the workflow runs — nodes, edges, routers, reducers —
	// and keep the old one registered until its runs have finished (see
	// the package documentation).
	Version string
	// Heartbeat is how often a running task tells Temporal it is alive
	// (default 10s). A task whose worker stops heartbeating for three
	// times this long is run again on another worker.
	Heartbeat time.Duration
	// TaskTimeout bounds one attempt of a node that has no timeout of its
	// own (graph.WithTimeout); default one hour.
	TaskTimeout time.Duration
	// InfraRetries is how many more attempts a task gets for failures that
	// are not the node's — a worker lost, a timeout — on top of its node's
	// retry policy (default 3; negative means none).
	InfraRetries int
	// Progress turns a task's events into timeline entries, readable
	// through Run.Progress: EventTaskStart in the workflow (it must be
	// deterministic), EventCustom and EventTaskEnd on the worker that ran
	// the task. The value is stored as JSON. Nil keeps a timeline of task
	// starts and ends only.
	Progress func(graph.Event[S]) (any, bool)
}

// New makes c runnable on Temporal under name, which must be the same on
// workers and clients (letters, digits, '.', '-', '_').
func New[S any](name string, c *graph.Compiled[S], opts Options[S]) (*Graph[S], error) {
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}) >= 0 {
		return nil, fmt.Errorf("temporalgraph: graph name %q: use letters, digits, '.', '-' and '_'", name)
	}
	if c == nil {
		return nil, fmt.Errorf("temporalgraph: graph %q: the compiled graph is nil", name)
	}
	if cached := c.CachedNodes(); len(cached) > 0 {
		return nil, fmt.Errorf("temporalgraph: graph %q: node %q has a cache policy (graph.WithCachePolicy), which a run on Temporal does not apply — the workflow must not read a cache, and each task's result is kept in the run's history: compile the graph for Temporal without cache policies", name, cached[0])
	}
	if opts.Version == "" {
		opts.Version = "v1"
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 10 * time.Second
	}
	if opts.TaskTimeout <= 0 {
		opts.TaskTimeout = time.Hour
	}
	if opts.InfraRetries == 0 {
		opts.InfraRetries = 3
	}
	opts.InfraRetries = max(opts.InfraRetries, 0)
	sum := sha256.Sum256([]byte(c.Mermaid()))
	return &Graph[S]{name: name, c: c, opts: opts, fingerprint: hex.EncodeToString(sum[:8])}, nil
}

// Compiled returns the graph that runs.
func (g *Graph[S]) Compiled() *graph.Compiled[S] { return g.c }

// WorkflowName is the graph's workflow type: "name@version".
func (g *Graph[S]) WorkflowName() string { return g.name + "@" + g.opts.Version }

// ActivityName is the activity type that runs the graph's tasks.
func (g *Graph[S]) ActivityName() string { return g.WorkflowName() + ".task" }

// Fingerprint identifies the graph's shape (its nodes and edges, as
// Mermaid draws them). A run records it when it starts; a worker whose
// graph has another fingerprint under the same version refuses to go on
// with the run rather than break it (see the package documentation).
func (g *Graph[S]) Fingerprint() string { return g.fingerprint }

// Registry is where Register puts the workflow and the activity: a
// worker.Worker, or the SDK's test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the graph's workflow and its task activity with a
// worker. A worker.WorkflowReplayer takes the workflow alone:
// RegisterWorkflowWithOptions(g.Workflow, workflow.RegisterOptions{Name: g.WorkflowName()}).
func (g *Graph[S]) Register(r Registry) {
	r.RegisterWorkflowWithOptions(g.Workflow, workflow.RegisterOptions{Name: g.WorkflowName()})
	g.RegisterTasks(r)
}

// RegisterTasks registers the activity that runs the graph's tasks alone,
// for a worker whose own workflow calls Run.
func (g *Graph[S]) RegisterTasks(r interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(g.runTask, activity.RegisterOptions{Name: g.ActivityName()})
}

// Input is what a run starts from.
type Input[S any] struct {
	// State is the input, written through the fields' reducers as Invoke
	// does.
	State S `json:"state"`
	// RecursionLimit overrides the graph's step limit when positive.
	RecursionLimit int `json:"recursion_limit,omitempty"`
}

// Entry is one line of a run's timeline.
type Entry struct {
	Seq  int    `json:"seq"`
	Step int    `json:"step"`
	Node string `json:"node"`
	Task int    `json:"task"`
	// Kind is the kind of event it describes: task_start, custom,
	// task_end, or KindAnswerRejected.
	Kind string `json:"kind"`
	// Value is what Options.Progress made of the event, as JSON; Decode
	// reads it.
	Value json.RawMessage `json:"value,omitempty"`
	// Err is the task's error, for a task_end that failed.
	Err string `json:"error,omitempty"`
}

// KindAnswerRejected is the Kind of the entry that says a node refused
// the answer to its interrupt (Err says why): the interrupt waits again.
const KindAnswerRejected = "answer_rejected"

// Decode decodes an entry's Value into T.
func Decode[T any](e Entry) (T, error) {
	var v T
	if len(e.Value) == 0 {
		return v, fmt.Errorf("temporalgraph: timeline entry %d (%s of %s) has no value", e.Seq, e.Kind, e.Node)
	}
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return v, fmt.Errorf("temporalgraph: timeline entry %d (%s of %s): %w", e.Seq, e.Kind, e.Node, err)
	}
	return v, nil
}

// Progress is a run's progress, as its query returns it.
type Progress struct {
	// Step is the step running, or the last one when Done.
	Step int `json:"step"`
	// Running lists the tasks in flight.
	Running []TaskRef `json:"running,omitempty"`
	// Entries are the timeline's entries from the one asked for.
	Entries []Entry `json:"entries,omitempty"`
	// Next is where the next query should start to get only new entries.
	Next int `json:"next"`
	// Interrupts are what the run waits on: answer them with Run.Answer.
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Done is set when the graph has finished, or failed.
	Done bool   `json:"done,omitempty"`
	Err  string `json:"error,omitempty"`
}

// TaskRef names a task of a step.
type TaskRef struct {
	Step int    `json:"step"`
	Node string `json:"node"`
	Task int    `json:"task"`
}

// AnswerArg answers an interrupt: the argument of the answer Update and
// Signal.
type AnswerArg struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// The names of the run's query, update and signal.
const (
	QueryProgress = "deepgraph.progress"
	UpdateAnswer  = "deepgraph.answer"
	SignalAnswer  = "deepgraph.answer"
)
