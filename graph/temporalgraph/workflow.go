package temporalgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
)

// engineVersion is the version of this package's workflow logic, recorded
// in every run's history (workflow.GetVersion "deepgraph.engine"). A change
// to what the workflow does — the commands it issues, their order — raises
// it and keeps the old path for runs recorded under the old number.
const engineVersion workflow.Version = 1

// maxParallel bounds a step's activities in flight, under Temporal's
// default limit of 2,000 pending activities per workflow.
const maxParallel = 1000

// errTypeGraph is the error type of a run whose graph failed; its details
// are the state the run got to (StateOf).
const errTypeGraph = "GraphError"

// StateOf returns the state that the error of a failed run carries: the
// state before the step that failed, with what that step's finished tasks
// wrote — the work that is not lost.
func StateOf[S any](err error) (S, bool) {
	var s S
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errTypeGraph || !app.HasDetails() {
		return s, false
	}
	return s, app.Details(&s) == nil
}

// Workflow is the graph's workflow function, registered under
// WorkflowName: it runs the graph from in and returns the final state. A
// failed run's error carries the state it got to (StateOf).
func (g *Graph[S]) Workflow(ctx workflow.Context, in Input[S]) (S, error) {
	return g.Run(ctx, in)
}

// Run runs the graph inside a workflow of one's own, to do more around it:
// the engine's steps, routers and merges run here, deterministically, and
// each task runs as an activity (registered by Register). The run answers
// the progress query and the answer update and signal. Call it once per
// workflow.
func (g *Graph[S]) Run(ctx workflow.Context, in Input[S]) (S, error) {
	var zero S
	rs := &runState[S]{g: g, ctx: ctx, scope: workflow.GetInfo(ctx).WorkflowExecution.ID, answers: map[string]json.RawMessage{}}
	if err := rs.handle(); err != nil {
		return zero, err
	}
	var recorded string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return g.fingerprint }).Get(&recorded); err != nil {
		return zero, fmt.Errorf("temporalgraph: reading the graph's recorded fingerprint: %w", err)
	}
	if recorded != g.fingerprint {
		// A panic fails the workflow task, not the run: the run waits for a
		// worker with the graph it started on.
		panic(fmt.Sprintf("temporalgraph: run %s of %s started on a graph with fingerprint %s, and this worker's graph has %s: "+
			"a change to the nodes or edges needs a new Options.Version, with the old version still registered until its runs finish",
			rs.scope, g.WorkflowName(), recorded, g.fingerprint))
	}
	_ = workflow.GetVersion(ctx, "deepgraph.engine", engineVersion, engineVersion)

	opts := []graph.RunOption{graph.WithTaskRunner(rs)}
	if in.RecursionLimit > 0 {
		opts = append(opts, graph.RecursionLimit(in.RecursionLimit))
	}
	final, err := g.c.Invoke(context.Background(), in.State, opts...)
	rs.done = true
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return final, cerr // cancelled: the run is marked so
		}
		rs.err = err.Error()
		if merged, ok := rs.finishedWrites(final); ok {
			final = merged
		}
		return final, temporal.NewNonRetryableApplicationError(err.Error(), errTypeGraph, nil, final)
	}
	return final, nil
}

// runState is one run's workflow-side state: the task runner the engine
// calls, and what the query and the answers read and write. Everything runs
// on the workflow's coroutines, one at a time, so it needs no lock.
type runState[S any] struct {
	g     *Graph[S]
	ctx   workflow.Context
	scope string // the workflow ID: interrupt IDs are unique per run

	step     int
	running  []TaskRef
	inflight int
	entries  []Entry
	pending  []graph.PendingInterrupt
	answers  map[string]json.RawMessage
	done     bool
	err      string
	last     []graph.RemoteResult // the latest step's results
}

// finishedWrites adds to s, the state before a step that failed, what the
// step's finished tasks wrote — as graph.Compiled.State shows a stored
// thread after a failure — so that a run's partial work is not lost.
func (rs *runState[S]) finishedWrites(s S) (S, bool) {
	var ups []json.RawMessage
	failed := false
	for _, r := range rs.last {
		if r.Err != nil {
			failed = true
		} else if r.Update != nil {
			ups = append(ups, r.Update)
		}
	}
	if !failed || len(ups) == 0 {
		return s, false // the run failed after its last step was merged
	}
	merged, err := rs.g.c.MergeUpdates(s, ups...)
	return merged, err == nil
}

// handle installs the run's query, update and signal handlers.
func (rs *runState[S]) handle() error {
	if err := workflow.SetQueryHandler(rs.ctx, QueryProgress, rs.progress); err != nil {
		return err
	}
	err := workflow.SetUpdateHandlerWithOptions(rs.ctx, UpdateAnswer,
		func(ctx workflow.Context, a AnswerArg) error { rs.answers[a.ID] = a.Value; return nil },
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, a AnswerArg) error { return rs.checkAnswer(a) }})
	if err != nil {
		return err
	}
	signals := workflow.GetSignalChannel(rs.ctx, SignalAnswer)
	workflow.Go(rs.ctx, func(ctx workflow.Context) {
		for {
			var a AnswerArg
			if !signals.Receive(ctx, &a) {
				return
			}
			if err := rs.checkAnswer(a); err != nil {
				workflow.GetLogger(ctx).Warn("temporalgraph: answer signal ignored", "error", err.Error())
				continue
			}
			rs.answers[a.ID] = a.Value
		}
	})
	return nil
}

// checkAnswer refuses an answer to no pending interrupt, or one that is not
// JSON.
func (rs *runState[S]) checkAnswer(a AnswerArg) error {
	if !json.Valid(a.Value) {
		return fmt.Errorf("temporalgraph: the answer to interrupt %q is not JSON", a.ID)
	}
	var waiting []string
	for _, pi := range rs.pending {
		if _, answered := rs.answers[pi.ID]; answered {
			continue
		}
		if pi.ID == a.ID {
			return nil
		}
		waiting = append(waiting, fmt.Sprintf("%s (node %q)", pi.ID, pi.Node))
	}
	if len(waiting) == 0 {
		return fmt.Errorf("temporalgraph: run %s waits for no answer (interrupt %q)", rs.scope, a.ID)
	}
	return fmt.Errorf("temporalgraph: run %s has no interrupt %q waiting; waiting: %s", rs.scope, a.ID, strings.Join(waiting, ", "))
}

// progress answers the progress query from entry from on.
func (rs *runState[S]) progress(from int) (Progress, error) {
	p := Progress{Step: rs.step, Running: rs.running, Next: len(rs.entries), Done: rs.done, Err: rs.err}
	if from >= 0 && from < len(rs.entries) {
		p.Entries = rs.entries[from:]
	}
	for _, pi := range rs.pending {
		if _, answered := rs.answers[pi.ID]; !answered {
			p.Interrupts = append(p.Interrupts, pi)
		}
	}
	return p, nil
}

func (rs *runState[S]) add(e Entry) {
	e.Seq = len(rs.entries)
	rs.entries = append(rs.entries, e)
}

// RunTasks runs a step's tasks as parallel activities and waits for all of
// them; the engine merges their updates in task order.
func (rs *runState[S]) RunTasks(_ context.Context, step graph.RemoteStep) ([]graph.RemoteResult, error) {
	ctx := rs.ctx
	rs.step = step.Step
	res := make([]graph.RemoteResult, len(step.Tasks))
	wg := workflow.NewWaitGroup(ctx)
	for k := range step.Tasks {
		t := step.Tasks[k]
		e := Entry{Step: step.Step, Node: t.Node, Task: t.Index, Kind: graph.EventTaskStart.String()}
		e.Value = rs.g.describe(graph.Event[S]{Kind: graph.EventTaskStart, Step: step.Step, Node: t.Node, Task: t.Index, Arg: t.Arg})
		rs.add(e)
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if err := workflow.Await(ctx, func() bool { return rs.inflight < maxParallel }); err != nil {
				res[k] = graph.RemoteResult{Err: err}
				return
			}
			rs.inflight++
			res[k] = rs.runTask(ctx, step, t)
			rs.inflight--
		})
	}
	wg.Wait(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs.last = res
	return res, nil
}

// runTask runs one task as an activity: again with the answers, each time
// it stops at interrupts, until it finishes or fails. An answer the node
// refuses — not of the type it asked for — is set aside, and the interrupt
// waits again, as in-process.
func (rs *runState[S]) runTask(ctx workflow.Context, step graph.RemoteStep, t graph.RemoteTask) graph.RemoteResult {
	ref := TaskRef{Step: step.Step, Node: t.Node, Task: t.Index}
	rs.running = append(rs.running, ref)
	defer func() { rs.running = slices.DeleteFunc(rs.running, func(r TaskRef) bool { return r == ref }) }()
	in := taskInput{Step: step.Step, Node: t.Node, Index: t.Index, Arg: t.ArgJSON, Scope: rs.scope}
	asked := map[string]graph.PendingInterrupt{}
	for round := 0; ; round++ {
		opts := rs.g.activityOptions(t)
		opts.ActivityID = fmt.Sprintf("s%d-t%d-%s", step.Step, t.Index, t.Node)
		if round > 0 {
			opts.ActivityID += fmt.Sprintf("-r%d", round)
		}
		var out taskOutput
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), rs.g.ActivityName(), step.State, in).Get(ctx, &out)
		for _, e := range out.Entries {
			rs.add(e)
		}
		var wait []graph.PendingInterrupt
		switch {
		case err != nil:
			entries, rejected, err := taskError(step.Step, t.Node, err)
			for _, e := range entries {
				rs.add(e)
			}
			pi, ok := asked[rejected]
			if !ok {
				return graph.RemoteResult{Err: err}
			}
			delete(rs.answers, rejected)
			in.Answers = slices.DeleteFunc(in.Answers, func(a graph.AnswerRecord) bool { return a.ID == rejected })
			rs.add(Entry{Step: step.Step, Node: t.Node, Task: t.Index, Kind: KindAnswerRejected, Err: err.Error()})
			wait = []graph.PendingInterrupt{pi}
		case len(out.Interrupts) == 0:
			return graph.RemoteResult{Update: out.Update}
		default:
			wait = out.Interrupts
			for _, pi := range wait {
				asked[pi.ID] = pi
			}
		}
		rs.pending = append(rs.pending, wait...)
		answered := func() bool {
			for _, pi := range wait {
				if _, ok := rs.answers[pi.ID]; !ok {
					return false
				}
			}
			return true
		}
		if err := workflow.Await(ctx, answered); err != nil {
			return graph.RemoteResult{Err: err}
		}
		for _, pi := range wait {
			in.Answers = append(in.Answers, graph.AnswerRecord{ID: pi.ID, Value: rs.answers[pi.ID]})
		}
		rs.pending = slices.DeleteFunc(rs.pending, func(pi graph.PendingInterrupt) bool {
			return slices.ContainsFunc(wait, func(o graph.PendingInterrupt) bool { return o.ID == pi.ID })
		})
	}
}

// activityOptions maps a node's retry policy and timeout onto an
// activity's: the node's attempts plus InfraRetries, its backoff, and a
// start-to-close timeout a little over its own (which the worker enforces).
func (g *Graph[S]) activityOptions(t graph.RemoteTask) workflow.ActivityOptions {
	rp := &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}
	attempts := 1
	if p := t.Retry; p != nil {
		attempts = p.MaxAttempts
		rp.InitialInterval = max(p.InitialInterval, time.Millisecond) // 0: at once (Temporal's least)
		rp.BackoffCoefficient = max(p.BackoffFactor, 1)
		rp.MaximumInterval = max(p.MaxInterval, rp.InitialInterval)
	}
	rp.MaximumAttempts = int32(attempts + g.opts.InfraRetries)
	timeout := g.opts.TaskTimeout
	if t.Timeout > 0 {
		timeout = t.Timeout + max(t.Timeout/10, 5*time.Second)
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    3 * g.opts.Heartbeat,
		RetryPolicy:         rp,
		WaitForCancellation: true,
	}
}

// taskError turns an activity's failure back into the node's error, with
// the timeline entries of its last attempt and, when the node refused an
// answer, the interrupt whose answer it was.
func taskError(step int, node string, err error) (entries []Entry, rejected string, _ error) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == errTypeNode {
		var f taskFailure
		if app.HasDetails() && app.Details(&f) == nil {
			return f.Entries, f.Rejected, &graph.NodeError{Node: node, Step: step, Attempts: f.Attempts, Err: &remoteError{msg: f.Cause, timeout: f.Timeout}}
		}
	}
	return nil, "", &graph.NodeError{Node: node, Step: step, Err: err}
}

// remoteError is a node's error as the worker that ran it described it.
type remoteError struct {
	msg     string
	timeout bool
}

func (e *remoteError) Error() string { return e.msg }

// Is lets a timeout on the worker match graph.ErrTimeout.
func (e *remoteError) Is(target error) bool { return e.timeout && target == graph.ErrTimeout }
