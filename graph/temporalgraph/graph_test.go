package temporalgraph_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// twoStep is Start → a → next → End.
func twoStep(t *testing.T, next string) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("a", graphtest.LogNode("a"))
	g.AddNode(next, graphtest.LogNode(next))
	g.AddSequence(graph.Start, "a", next, graph.End)
	return tgCompile(t, g)
}

func TestNew(t *testing.T) {
	c := twoStep(t, "b")
	for _, name := range []string{"", "a b", "a/b", "a@b", "a:b", "é", "a\n"} {
		_, err := temporalgraph.New(name, c, temporalgraph.Options[graphtest.State]{})
		require.Error(t, err, "name %q", name)
		assert.Contains(t, err.Error(), "letters, digits")
	}
	_, err := temporalgraph.New[graphtest.State]("ok", nil, temporalgraph.Options[graphtest.State]{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil")

	g := newGraph(t, "My.graph-1_x", c, temporalgraph.Options[graphtest.State]{})
	assert.Equal(t, "My.graph-1_x@v1", g.WorkflowName(), "the version defaults to v1")
	assert.Equal(t, "My.graph-1_x@v1.task", g.ActivityName())
	assert.Same(t, c, g.Compiled())
	g = newGraph(t, "research", c, temporalgraph.Options[graphtest.State]{Version: "v2"})
	assert.Equal(t, "research@v2", g.WorkflowName())
	assert.Equal(t, "research@v2.task", g.ActivityName())
}

func TestNewRefusesCachePolicies(t *testing.T) {
	g := graphtest.New()
	g.AddNode("a", graphtest.LogNode("a"), graph.WithCachePolicy(graph.CachePolicy[graphtest.State]{}))
	g.AddSequence(graph.Start, "a", graph.End)
	c, err := g.Compile(graph.WithCache(graph.NewMemoryCache()))
	require.NoError(t, err)
	_, err = temporalgraph.New("cached", c, temporalgraph.Options[graphtest.State]{})
	require.ErrorContains(t, err, `temporalgraph: graph "cached": node "a" has a cache policy (graph.WithCachePolicy), which a run on Temporal does not apply`)
}

func TestFingerprint(t *testing.T) {
	fp := func(c *graph.Compiled[graphtest.State], opts temporalgraph.Options[graphtest.State]) string {
		return newGraph(t, "fp", c, opts).Fingerprint()
	}
	b := fp(twoStep(t, "b"), temporalgraph.Options[graphtest.State]{})
	assert.NotEmpty(t, b)
	assert.Equal(t, b, fp(twoStep(t, "b"), temporalgraph.Options[graphtest.State]{}), "the same graph, built again")
	assert.Equal(t, b, fp(twoStep(t, "b"), temporalgraph.Options[graphtest.State]{Version: "v9", Heartbeat: time.Second}), "options are not the graph")
	assert.NotEqual(t, b, fp(twoStep(t, "c"), temporalgraph.Options[graphtest.State]{}), "another node")

	g := graphtest.New()
	g.AddNode("a", graphtest.LogNode("a"))
	g.AddNode("b", graphtest.LogNode("b"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("a", graph.End)
	g.AddEdge("b", graph.End)
	assert.NotEqual(t, b, fp(tgCompile(t, g), temporalgraph.Options[graphtest.State]{}), "the same nodes, other edges")
}

// history is the start of a run's history as a server records it: the
// run of g started, its first workflow task recorded the graph's
// fingerprint and the engine's version, and scheduled the task of node a.
func history(t *testing.T, workflowType, activityType, fingerprint string) *historypb.History {
	dc := converter.GetDefaultDataConverter()
	payloads := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		require.NoError(t, err)
		return p
	}
	now := timestamppb.New(time.Unix(1_700_000_000, 0))
	q := &taskqueuepb.TaskQueue{Name: "q"}
	ev := func(id int64, typ enumspb.EventType) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventTime: now, EventType: typ}
	}
	started := ev(1, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
	started.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
		WorkflowType: &commonpb.WorkflowType{Name: workflowType}, TaskQueue: q, Input: payloads(temporalgraph.Input[graphtest.State]{}),
		WorkflowRunTimeout: durationpb.New(time.Hour), WorkflowTaskTimeout: durationpb.New(10 * time.Second),
		OriginalExecutionRunId: "run-1", FirstExecutionRunId: "run-1",
	}}
	scheduled := ev(2, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
	scheduled.Attributes = &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{
		TaskQueue: q, StartToCloseTimeout: durationpb.New(10 * time.Second), Attempt: 1}}
	taskStarted := ev(3, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	taskStarted.Attributes = &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{ScheduledEventId: 2}}
	completed := ev(4, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	completed.Attributes = &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{ScheduledEventId: 2, StartedEventId: 3}}
	sideEffect := ev(5, enumspb.EVENT_TYPE_MARKER_RECORDED)
	sideEffect.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
		MarkerName: "SideEffect", WorkflowTaskCompletedEventId: 4,
		Details: map[string]*commonpb.Payloads{"side-effect-id": payloads(int64(1)), "data": payloads(fingerprint)}}}
	version := ev(6, enumspb.EVENT_TYPE_MARKER_RECORDED)
	version.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
		MarkerName: "Version", WorkflowTaskCompletedEventId: 4,
		Details: map[string]*commonpb.Payloads{"change-id": payloads("deepgraph.engine"), "version": payloads(workflow.Version(1)), "version-search-attribute-updated": payloads(false)}}}
	activity := ev(7, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
	activity.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
		ActivityId: "s1-t0-a", ActivityType: &commonpb.ActivityType{Name: activityType}, TaskQueue: q, WorkflowTaskCompletedEventId: 4}}
	return &historypb.History{Events: []*historypb.HistoryEvent{started, scheduled, taskStarted, completed, sideEffect, version, activity}}
}

func replay(t *testing.T, g *temporalgraph.Graph[graphtest.State], h *historypb.History) error {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(g.Workflow, workflow.RegisterOptions{Name: g.WorkflowName()})
	return r.ReplayWorkflowHistory(testLogger(t), h)
}

// A run recorded on a → b replays on a worker with the same graph; on a
// worker whose graph is a → c under the same name and version, the
// workflow panics at once — though its first step, the one recorded, is
// the same — naming the rule.
func TestFingerprintGuardOnReplay(t *testing.T) {
	recorded := newGraph(t, "fp", twoStep(t, "b"), temporalgraph.Options[graphtest.State]{})
	h := history(t, recorded.WorkflowName(), recorded.ActivityName(), recorded.Fingerprint())

	same := newGraph(t, "fp", twoStep(t, "b"), temporalgraph.Options[graphtest.State]{})
	require.NoError(t, replay(t, same, h), "the same graph replays its own history")

	changed := newGraph(t, "fp", twoStep(t, "c"), temporalgraph.Options[graphtest.State]{})
	require.Equal(t, recorded.WorkflowName(), changed.WorkflowName())
	err := replay(t, changed, h)
	require.Error(t, err, "a changed graph went on with a run started on another")
	assert.Contains(t, err.Error(), recorded.Fingerprint())
	assert.Contains(t, err.Error(), changed.Fingerprint())
	assert.Contains(t, err.Error(), "Options.Version")
}
