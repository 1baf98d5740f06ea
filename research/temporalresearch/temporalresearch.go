// Package temporalresearch runs research on Temporal: the deep-search graph
// of package research as a durable workflow (package graph/temporalgraph),
// whose tasks — query writing, each web search, reflection, the answer —
// run as activities on any worker, and whose result is the research.Report.
//
// A worker builds a research.Researcher with its models and back end and
// registers it (New, Register); a client starts runs with Start, follows
// them with temporalgraph.Run's Progress and Follow (the timeline's values
// are research.Activity), and gets the Report with Run.Result. A run that
// fails ends with an error whose details carry the incomplete report
// (ReportOf).
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
}

// Research is the research workflow and its activities, for a worker.
type Research struct {
	r *research.Researcher
	g *temporalgraph.Graph[research.State]
}

// DefaultHeartbeat is how often a research task heartbeats unless
// Options.Heartbeat says otherwise: research tasks are short, so a lost
// worker's tasks run again elsewhere within three beats, 6 s.
const DefaultHeartbeat = 2 * time.Second

// New prepares r's graph for Temporal. opts tune the tasks (heartbeat,
// timeouts); its Version and Progress are set here.
func New(r *research.Researcher, opts temporalgraph.Options[research.State]) (*Research, error) {
	opts.Version = Version
	opts.Progress = Describe
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	g, err := temporalgraph.New(Name, r.Graph(), opts)
	if err != nil {
		return nil, err
	}
	return &Research{r: r, g: g}, nil
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

// Workflow runs the research graph for req and returns its report. A run
// that fails returns an error whose details hold the report of what it had
// gathered, marked Incomplete (ReportOf reads it).
func (x *Research) Workflow(ctx workflow.Context, req Request) (*research.Report, error) {
	q := strings.TrimSpace(req.Question)
	if q == "" {
		return nil, temporal.NewNonRetryableApplicationError("temporalresearch: the question is empty", "BadRequest", nil)
	}
	in := research.State{Messages: []schemas.Message{schemas.UserMessage(q)}, InitialQueries: req.InitialQueries, MaxLoops: req.MaxLoops}
	if req.Review {
		in.Review = &req.Review
	}
	final, runErr := x.g.Run(ctx, temporalgraph.Input[research.State]{State: in})
	if runErr != nil && ctx.Err() != nil {
		return nil, runErr // cancelled
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var rep research.Report
	if err := workflow.ExecuteActivity(actx, reportActivity, final).Get(ctx, &rep); err != nil {
		if runErr != nil {
			return nil, runErr
		}
		return nil, err
	}
	if runErr != nil {
		// The graph's error, without the "(type: GraphError …)" of its wrapper.
		msg := runErr.Error()
		var app *temporal.ApplicationError
		if errors.As(runErr, &app) {
			msg = app.Message()
		}
		return nil, temporal.NewNonRetryableApplicationError(msg, errTypeFailed, nil, rep)
	}
	return &rep, nil
}

// errTypeFailed is the error type of a failed run; its details are the
// incomplete report.
const errTypeFailed = "deepgraph.ResearchFailed"

// report builds the report of a final state, on a worker.
func (x *Research) report(_ context.Context, s research.State) (*research.Report, error) {
	return x.r.ReportFrom(s), nil
}

// ReportOf returns the incomplete report a failed run's error carries.
func ReportOf(err error) (*research.Report, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errTypeFailed || !app.HasDetails() {
		return nil, false
	}
	var rep research.Report
	if app.Details(&rep) != nil {
		return nil, false
	}
	return &rep, true
}

// Start starts a research run on the workers of opts.TaskQueue.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req Request) (*temporalgraph.Run[*research.Report], error) {
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
	return temporalgraph.Attach[*research.Report](c, wr.GetID(), wr.GetRunID()), nil
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
