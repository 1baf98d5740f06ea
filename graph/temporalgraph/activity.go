package temporalgraph

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/graph"
)

// taskInput is the activity's argument beside the step's state (which is a
// payload of its own, the same for every task of the step, so that a
// blob store keeps it once).
type taskInput struct {
	Step    int                  `json:"step"`
	Node    string               `json:"node"`
	Index   int                  `json:"index"`
	Arg     json.RawMessage      `json:"arg,omitempty"`
	Scope   string               `json:"scope"`
	Answers []graph.AnswerRecord `json:"answers,omitempty"`
}

// taskOutput is the activity's result.
type taskOutput struct {
	Update     json.RawMessage          `json:"update,omitempty"`
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	Entries    []Entry                  `json:"entries,omitempty"`
}

// errTypeNode is the ApplicationError type of a node's failure; its
// details are a taskFailure.
const errTypeNode = "deepgraph.NodeError"

type taskFailure struct {
	Cause    string `json:"cause"`
	Attempts int    `json:"attempts"`
	Timeout  bool   `json:"timeout,omitempty"`
	// Rejected is the interrupt whose answer the node refused (a
	// graph.AnswerError): the run sets the answer aside and waits again.
	Rejected string `json:"rejected,omitempty"`
	// Entries are the failed attempt's timeline entries, its failed
	// task_end among them: an activity's failure carries no result.
	Entries []Entry `json:"entries,omitempty"`
}

// maxTaskEntries bounds the timeline entries one task adds.
const maxTaskEntries = 1000

// runTask is the activity: one attempt of one task, heartbeating while the
// node runs, so that a lost worker is noticed in 3×Heartbeat and the task
// runs again elsewhere, and so that the run's cancellation reaches the node.
//
// The heartbeat's details count the node's own failed attempts: Temporal's
// attempt number also counts attempts lost with a worker, which must not
// use up the node's retry policy.
func (g *Graph[S]) runTask(ctx context.Context, state json.RawMessage, in taskInput) (taskOutput, error) {
	failures := 0
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &failures); err != nil {
			failures = 0
		}
	}
	attempt := failures + 1
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(g.opts.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, failures)
			}
		}
	}()

	var out taskOutput
	var mu sync.Mutex // Emit may come from the node's goroutines
	observe := func(ev graph.Event[S]) {
		if ev.Kind == graph.EventTaskStart {
			return // the workflow has it
		}
		e := Entry{Step: ev.Step, Node: ev.Node, Task: ev.Task, Kind: ev.Kind.String(), Value: g.describe(ev)}
		if ev.Err != nil {
			e.Err = ev.Err.Error()
		}
		if e.Value == nil && ev.Kind == graph.EventCustom {
			return
		}
		mu.Lock()
		if len(out.Entries) < maxTaskEntries {
			out.Entries = append(out.Entries, e)
		}
		mu.Unlock()
	}
	res, err := g.c.RunTask(ctx, graph.TaskInput{
		Step: in.Step, State: state, Task: graph.RemoteTask{Node: in.Node, Index: in.Index, ArgJSON: in.Arg},
		Attempt: attempt, Scope: in.Scope, Answers: in.Answers,
	}, observe)
	stop()
	if err != nil {
		f := taskFailure{Cause: err.Error(), Attempts: attempt, Timeout: errors.Is(err, graph.ErrTimeout)}
		var ne *graph.NodeError
		if !errors.As(err, &ne) {
			// Not the node's failure — the worker runs another graph, or
			// the input does not decode: let another attempt, maybe on
			// another worker, try.
			return out, temporal.NewApplicationError(err.Error(), "deepgraph.TaskError")
		}
		f.Cause = ne.Err.Error()
		if ae := (*graph.AnswerError)(nil); errors.As(err, &ae) {
			f.Rejected = ae.ID
		}
		mu.Lock()
		f.Entries = out.Entries
		mu.Unlock()
		if res.Retry {
			activity.RecordHeartbeat(ctx, attempt) // this attempt failed: the next is attempt+1
			return out, temporal.NewApplicationError(err.Error(), errTypeNode, f)
		}
		return out, temporal.NewNonRetryableApplicationError(err.Error(), errTypeNode, nil, f)
	}
	out.Update, out.Interrupts = res.Update, res.Interrupts
	return out, nil
}

// describe is Options.Progress's value for ev, as JSON; nil when there is
// none.
func (g *Graph[S]) describe(ev graph.Event[S]) json.RawMessage {
	if g.opts.Progress == nil {
		return nil
	}
	v, ok := g.opts.Progress(ev)
	if !ok {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return data
}
