package temporalgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/deepgraph/deepgraph/graph"
)

// Run is a run on Temporal as a client sees it. S is what the workflow
// returns: the graph's state for Graph.Workflow, or the result of one's own
// workflow around Graph.Run.
type Run[S any] struct {
	c     client.Client
	id    string
	runID string
}

// Start starts a run of the graph on the task queue opts names (opts.ID
// names the run; Temporal makes one up when it is empty).
func (g *Graph[S]) Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, in Input[S]) (*Run[S], error) {
	if opts.TaskQueue == "" {
		return nil, fmt.Errorf("temporalgraph: starting %s: name the workers' task queue in StartWorkflowOptions.TaskQueue", g.WorkflowName())
	}
	wr, err := c.ExecuteWorkflow(ctx, opts, g.WorkflowName(), in)
	if err != nil {
		return nil, fmt.Errorf("temporalgraph: starting %s: %w", g.WorkflowName(), err)
	}
	return &Run[S]{c: c, id: wr.GetID(), runID: wr.GetRunID()}, nil
}

// Attach returns the run of workflow id (its latest run when runID is
// empty), started earlier, perhaps by another process.
func Attach[S any](c client.Client, id, runID string) *Run[S] {
	return &Run[S]{c: c, id: id, runID: runID}
}

// ID is the run's workflow ID.
func (r *Run[S]) ID() string { return r.id }

// RunID is the run's Temporal run ID.
func (r *Run[S]) RunID() string { return r.runID }

// Progress queries the run's progress, with the timeline from entry from.
func (r *Run[S]) Progress(ctx context.Context, from int) (Progress, error) {
	v, err := r.c.QueryWorkflow(ctx, r.id, r.runID, QueryProgress, from)
	if err != nil {
		return Progress{}, fmt.Errorf("temporalgraph: querying the progress of run %s: %w", r.id, err)
	}
	var p Progress
	if err := v.Get(&p); err != nil {
		return Progress{}, fmt.Errorf("temporalgraph: decoding the progress of run %s: %w", r.id, err)
	}
	return p, nil
}

// Answer answers the interrupt id the run waits on (Progress.Interrupts),
// through an Update: it returns once the run has the answer, or the run's
// refusal — no such interrupt — as an error.
func (r *Run[S]) Answer(ctx context.Context, id string, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("temporalgraph: the answer to interrupt %s cannot be encoded as JSON: %w", id, err)
	}
	h, err := r.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: r.id, RunID: r.runID, UpdateName: UpdateAnswer,
		Args: []any{AnswerArg{ID: id, Value: data}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("temporalgraph: answering interrupt %s of run %s: %w", id, r.id, err)
	}
	return nil
}

// Result waits for the run to end and returns what the workflow returned.
func (r *Run[S]) Result(ctx context.Context) (S, error) {
	var s S
	err := r.c.GetWorkflow(ctx, r.id, r.runID).Get(ctx, &s)
	return s, err
}

// Follow calls f with each new timeline entry, polling the progress every
// interval (default 500ms), until the run ends or ctx does, then returns the
// run's result — as soon as the run ends, not at the next poll. onWait,
// when not nil, is called with the interrupts the run waits on whenever
// they change.
func (r *Run[S]) Follow(ctx context.Context, every time.Duration, f func(Entry), onWait func([]graph.PendingInterrupt)) (S, error) {
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	type result struct {
		s   S
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan result, 1)
	go func() {
		s, err := r.Result(ctx)
		ended <- result{s, err}
	}()
	next := 0
	var waiting []string
	poll := func() {
		p, err := r.Progress(ctx, next)
		if err != nil {
			return // no worker is up, or the run has just ended: the result tells
		}
		for _, e := range p.Entries {
			f(e)
		}
		next = p.Next
		var ids []string
		for _, pi := range p.Interrupts {
			ids = append(ids, pi.ID)
		}
		if onWait != nil && !slices.Equal(ids, waiting) {
			waiting = ids
			onWait(p.Interrupts)
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		poll()
		select {
		case res := <-ended:
			if ctx.Err() == nil {
				poll() // the entries of the run's last moments
			}
			return res.s, res.err
		case <-ctx.Done():
			var zero S
			return zero, ctx.Err()
		case <-t.C:
		}
	}
}
