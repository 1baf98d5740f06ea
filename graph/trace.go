package graph

import "context"

// Tracer observes a run as it goes: the run, each superstep and each task
// attempt. It is the engine's hook for tracing (an OpenTelemetry adapter
// makes a span of each, see deepgraph's telemetry package) and imports
// nothing: the engine stays free of tracing libraries.
//
// Each Start method returns the context the observed work runs under — a
// step's tasks run under the step's context, and a task's node under the
// task's — so a tracer that puts its span in the context makes the spans of
// a run one tree, and nested runs (subgraphs, graphs a node invokes, Send
// fan-outs) children of the task that started them. The returned function
// ends the observation with its outcome; it is called exactly once.
//
// A Tracer is attached to a context with ContextWithTracer; every run under
// that context, nested ones included, reports to it. Without one the engine
// does no tracing work beyond one context lookup per run. Methods are called
// concurrently by the tasks of a step.
type Tracer interface {
	StartRun(ctx context.Context, run RunInfo) (context.Context, func(error))
	StartStep(ctx context.Context, step StepInfo) (context.Context, func(error))
	StartTask(ctx context.Context, task TaskInfo) (context.Context, func(error))
}

// RunInfo describes a run to a Tracer.
type RunInfo struct {
	// Thread is the run's thread, "" when it has none; RunID the run's
	// label (RunID), "" when it has none.
	Thread, RunID string
	// Resume is true for Resume and ResumeStream; Subgraph for a graph run
	// as a node of another (AddSubgraph, AddMappedSubgraph).
	Resume, Subgraph bool
}

// StepInfo describes a superstep to a Tracer.
type StepInfo struct {
	Step  int // 1 for the first step of the run
	Tasks int // tasks that run in the step
}

// TaskInfo describes one attempt of a task to a Tracer.
type TaskInfo struct {
	// Node is the node's name; inside a subgraph of a streamed or
	// interruptible run it is prefixed by its parent's path ("outer/inner").
	// A subgraph's run is in any case the child of its parent's task.
	Node  string
	Step  int
	Index int // the task's place in its step
	// Send is true for a task started by a Send (a task node's input).
	Send bool
	// Attempt counts from 1; RetryReason is the error of the previous
	// attempt when Attempt > 1.
	Attempt     int
	RetryReason error
}

type tracerKey struct{}

// ContextWithTracer returns a context under which every run, and every run
// nested in one, reports to t. A nil t turns tracing off below ctx.
func ContextWithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, tracerKey{}, tracerBox{t})
}

// TracerFrom returns the Tracer attached to ctx, or nil.
func TracerFrom(ctx context.Context) Tracer {
	b, _ := ctx.Value(tracerKey{}).(tracerBox)
	return b.t
}

// tracerBox lets ContextWithTracer(ctx, nil) hide an outer tracer.
type tracerBox struct{ t Tracer }
