// Package temporalresearch runs research on Temporal: the deep-search graph
// of package research as a durable workflow (package graph/temporalgraph),
// whose tasks — query writing, each web search, reflection, the answer —
// run as activities on any worker, and whose result is an Outcome: the
// research.Report and the models that wrote it.
//
// A worker builds a research.Researcher with its models and back end and
// registers it (New, Register); a client starts runs with Start, follows
// them with temporalgraph.Run's Progress and Follow (the timeline's values
// are research.Activity), answers reviews with Run.Answer (Request.Review),
// and gets the Outcome with Run.Result. A run that fails, passes its
// Request.Timeout or is cancelled ends with an error whose details carry
// the incomplete report (OutcomeOf).
package temporalresearch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
)

// Name is the research graph's name on Temporal; Version its workflow
// version (see temporalgraph's versioning rule): raise it with any change
// to the research graph's nodes, edges or routers.
const (
	Name    = "deepgraph.research"
	Version = "v1"
)

// WorkflowName is the research workflow's type, which clients start.
const WorkflowName = Name + "@" + Version

// Request is a research run's input.
type Request struct {
	Question string `json:"question"`
	// InitialQueries and MaxLoops override the worker's configuration for
	// this run when positive (research.InitialQueries, research.MaxLoops).
	InitialQueries int `json:"initial_queries,omitempty"`
	MaxLoops       int `json:"max_loops,omitempty"`
	// Review pauses the run before each round of searches for a person to
	// approve or edit the queries: the run's progress lists the interrupt,
	// whose payload is a research.ReviewRequest, and Run.Answer with a
	// research.ReviewAnswer continues it.
	Review bool `json:"review,omitempty"`
	// Timeout bounds the run: past it, the run stops and fails with the
	// report of what it had gathered, as a local run's --timeout does.
	// Zero: no bound.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Outcome is what a research run ends with: its report, and the models
// that worked on it, per role ("provider:model", as the worker was
// configured: Options.Models), so that a client can name them and price
// the run.
type Outcome struct {
	Report *research.Report  `json:"report"`
	Models map[string]string `json:"models,omitempty"`
}

// Options configure a worker's research workflow.
type Options struct {
	// Graph tunes the graph's tasks (heartbeat, timeouts, retries); its
	// Version and Progress are set by New.
	Graph temporalgraph.Options[research.State]
	// Models names the researcher's models per role, for Outcome.Models.
	Models map[string]string
}

// Research is the research workflow and its activities, for a worker.
type Research struct {
	r      *research.Researcher
	g      *temporalgraph.Graph[research.State]
	models map[string]string
}

// DefaultHeartbeat is how often a research task heartbeats unless
// Options.Graph.Heartbeat says otherwise: research tasks are short, so a lost
// worker's tasks run again elsewhere within three beats, 6 s.
const DefaultHeartbeat = 2 * time.Second

// New prepares r's graph for Temporal.
func New(r *research.Researcher, o Options) (*Research, error) {
	opts := o.Graph
	opts.Version = Version
	opts.Progress = Describe
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	g, err := temporalgraph.New(Name, r.Graph(), opts)
	if err != nil {
		return nil, err
	}
	return &Research{r: r, g: g, models: o.Models}, nil
}

// Graph is the research graph on Temporal.
func (x *Research) Graph() *temporalgraph.Graph[research.State] { return x.g }

// reportActivity is the activity that turns the final state into the
// report, on a worker (it reads the worker's back end).
const reportActivity = WorkflowName + ".report"

// Register registers the research workflow, the graph's task activity and
// the report activity.
func (x *Research) Register(r temporalgraph.Registry) {
	r.RegisterWorkflowWithOptions(x.Workflow, workflow.RegisterOptions{Name: WorkflowName})
	x.g.RegisterTasks(r)
	r.RegisterActivityWithOptions(x.report, activity.RegisterOptions{Name: reportActivity})
}

// Workflow runs the research graph for req and returns its outcome. A run
// that fails or passes its Timeout returns an error whose details hold the
// outcome with the report of what it had gathered, marked Incomplete; so
// does a cancelled run's CanceledError (OutcomeOf reads either).
func (x *Research) Workflow(ctx workflow.Context, req Request) (*Outcome, error) {
	q := strings.TrimSpace(req.Question)
	if q == "" {
		return nil, temporal.NewNonRetryableApplicationError("temporalresearch: the question is empty", "BadRequest", nil)
	}
	in := research.State{Messages: []schemas.Message{schemas.UserMessage(q)}, InitialQueries: req.InitialQueries, MaxLoops: req.MaxLoops}
	if req.Review {
		in.Review = &req.Review
	}
	gctx, stop := workflow.WithCancel(ctx)
	timedOut := false
	if req.Timeout > 0 {
		timer := workflow.NewTimer(gctx, req.Timeout)
		workflow.Go(gctx, func(c workflow.Context) {
			if timer.Get(c, nil) == nil {
				timedOut = true
				stop()
			}
		})
	}
	final, runErr := x.g.Run(gctx, temporalgraph.Input[research.State]{State: in})
	stop() // the timer
	cancelled := runErr != nil && ctx.Err() != nil
	if cancelled {
		// The report of a cancelled run is built all the same.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	out := &Outcome{Models: x.models}
	if err := workflow.ExecuteActivity(actx, reportActivity, final).Get(ctx, &out.Report); err != nil {
		if runErr != nil {
			return nil, runErr
		}
		return nil, err
	}
	switch {
	case cancelled:
		return nil, temporal.NewCanceledError(*out)
	case timedOut:
		msg := fmt.Sprintf("research: the run took longer than its timeout of %s", req.Timeout)
		return nil, temporal.NewNonRetryableApplicationError(msg, errTypeTimedOut, nil, *out)
	case runErr != nil:
		// The graph's error, without the "(type: GraphError …)" of its wrapper.
		msg := runErr.Error()
		var app *temporal.ApplicationError
		if errors.As(runErr, &app) {
			msg = app.Message()
		}
		return nil, temporal.NewNonRetryableApplicationError(msg, errTypeFailed, nil, *out)
	}
	return out, nil
}

// The error types of a failed run and of one past its Request.Timeout;
// their details are the Outcome with the incomplete report.
const (
	errTypeFailed   = "deepgraph.ResearchFailed"
	errTypeTimedOut = "deepgraph.ResearchTimedOut"
)

// TimedOut reports whether err is the error of a run stopped by its
// Request.Timeout.
func TimedOut(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == errTypeTimedOut
}

// report builds the report of a final state, on a worker.
func (x *Research) report(_ context.Context, s research.State) (*research.Report, error) {
	return x.r.ReportFrom(s), nil
}

// OutcomeOf returns the outcome — the incomplete report — that the error
// of a failed, timed-out or cancelled run carries.
func OutcomeOf(err error) (*Outcome, bool) {
	var out Outcome
	var app *temporal.ApplicationError
	var cancelled *temporal.CanceledError
	switch {
	case errors.As(err, &app) && (app.Type() == errTypeFailed || app.Type() == errTypeTimedOut) && app.HasDetails():
		if app.Details(&out) != nil {
			return nil, false
		}
	case errors.As(err, &cancelled) && cancelled.HasDetails():
		if cancelled.Details(&out) != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	return &out, out.Report != nil
}

// Start starts a research run on the workers of opts.TaskQueue.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req Request) (*temporalgraph.Run[*Outcome], error) {
	if strings.TrimSpace(req.Question) == "" {
		return nil, errors.New("temporalresearch: the question is empty")
	}
	if opts.TaskQueue == "" {
		return nil, errors.New("temporalresearch: name the workers' task queue in StartWorkflowOptions.TaskQueue")
	}
	wr, err := c.ExecuteWorkflow(ctx, opts, WorkflowName, req)
	if err != nil {
		return nil, fmt.Errorf("temporalresearch: starting a research run: %w", err)
	}
	return temporalgraph.Attach[*Outcome](c, wr.GetID(), wr.GetRunID()), nil
}

// Describe is the timeline of a research run: research.Describe's
// activities, but the answer's tokens, which would swell the history.
func Describe(ev graph.Event[research.State]) (any, bool) {
	a, ok := research.Describe(ev)
	if !ok || a.Kind == research.ActivityToken {
		return nil, false
	}
	return a, true
}
