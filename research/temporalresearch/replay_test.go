package temporalresearch_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/temporalresearch"
	"github.com/deepgraph/deepgraph/schemas"
)

// historyFile is the history of one research run (the script of
// temporalresearch_test.go: two queries, one follow-up round, an answer),
// recorded on a real Temporal server by TestRecordHistory. Replaying it
// through the current workflow code checks that the code still makes the
// decisions that run made — that runs in flight survive a deploy.
//
// Re-record it only when the recorded workflow type goes away: when
// temporalresearch.Version is raised (a change to the research graph's
// nodes, edges or routers, by temporalgraph's versioning rule), the new
// version needs its own history. A replay that fails without a new Version
// means the change would break runs in flight: raise the Version (or, for
// temporalgraph's own workflow logic, guard the change with
// workflow.GetVersion) rather than re-record. To re-record, with a Temporal
// development server on 127.0.0.1:7233:
//
//	cd scripts/temporal-dev && go run . --port 7233 &
//	DEEPGRAPH_TEMPORAL_RECORD=127.0.0.1:7233 go test ./research/temporalresearch -run TestRecordHistory -count=1 -v
const historyFile = "testdata/research-history.json"

// replayer has fn registered as the research workflow type.
func replayer(t *testing.T, fn any) worker.WorkflowReplayer {
	t.Helper()
	rp := worker.NewWorkflowReplayer()
	rp.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: temporalresearch.WorkflowName})
	return rp
}

func newResearch(t *testing.T) *temporalresearch.Research {
	t.Helper()
	x, err := temporalresearch.New(newResearcher(t, answerReply()), temporalresearch.Options{})
	require.NoError(t, err)
	return x
}

func TestReplayRecordedHistory(t *testing.T) {
	t.Run("the current code replays it", func(t *testing.T) {
		x := newResearch(t)
		require.NoError(t, replayer(t, x.Workflow).ReplayWorkflowHistoryFromJSONFile(quiet(), historyFile))
	})

	t.Run("a changed graph under the same version is refused", func(t *testing.T) {
		// The research graph with one more node, fact_check, between the
		// answer and the end — what a change that forgot to raise Version
		// would deploy. Its fingerprint differs from the one the run
		// recorded, and the guard stops the replay.
		changed := changedGraph(t)
		require.NotEqual(t, newResearch(t).Graph().Fingerprint(), changed.Fingerprint())
		wf := func(ctx workflow.Context, req temporalresearch.Request) (*temporalresearch.Outcome, error) {
			in := research.State{Messages: []schemas.Message{schemas.UserMessage(req.Question)}}
			_, err := changed.Run(ctx, temporalgraph.Input[research.State]{State: in})
			return nil, err
		}
		err := replayer(t, wf).ReplayWorkflowHistoryFromJSONFile(silent(), historyFile)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "fingerprint")
		assert.Contains(t, err.Error(), "a change to the nodes or edges needs a new Options.Version")
	})

	t.Run("changed workflow commands are nondeterministic", func(t *testing.T) {
		// The same graph, but the workflow does something first that the
		// run did not: Temporal's own replay check fails.
		x := newResearch(t)
		wf := func(ctx workflow.Context, req temporalresearch.Request) (*temporalresearch.Outcome, error) {
			if err := workflow.Sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return x.Workflow(ctx, req)
		}
		err := replayer(t, wf).ReplayWorkflowHistoryFromJSONFile(silent(), historyFile)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "TMPRL1100", "the SDK's nondeterminism error")
	})
}

// changedGraph is the research graph's shape plus a fact_check node, under
// the research workflow's name and version. Its nodes never run: the guard
// stops the replay first.
func changedGraph(t *testing.T) *temporalgraph.Graph[research.State] {
	t.Helper()
	answer := graph.Value(func(s *research.State) *string { return &s.Answer })
	noop := func(context.Context, research.State) (graph.Update[research.State], error) {
		return graph.Update[research.State]{}, nil
	}
	g := graph.New(answer)
	g.AddNode(research.NodeGenerateQuery, noop)
	graph.AddTask(g, research.NodeWebResearch, func(context.Context, research.Task) (graph.Update[research.State], error) {
		return graph.Update[research.State]{}, nil
	})
	g.AddNode(research.NodeReflection, noop)
	g.AddNode(research.NodeReviewQueries, noop)
	g.AddNode(research.NodeFinalizeAnswer, noop)
	g.AddNode("fact_check", noop)
	toEnd := func(research.State) graph.Route { return graph.Goto(research.NodeFinalizeAnswer) }
	g.AddEdge(graph.Start, research.NodeGenerateQuery)
	g.AddConditional(research.NodeGenerateQuery, toEnd, research.NodeWebResearch, research.NodeReviewQueries)
	g.AddEdge(research.NodeWebResearch, research.NodeReflection)
	g.AddConditional(research.NodeReflection, toEnd, research.NodeWebResearch, research.NodeReviewQueries, research.NodeFinalizeAnswer)
	g.AddConditional(research.NodeReviewQueries, toEnd, research.NodeWebResearch, research.NodeFinalizeAnswer)
	g.AddEdge(research.NodeFinalizeAnswer, "fact_check")
	g.AddEdge("fact_check", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)
	tg, err := temporalgraph.New(temporalresearch.Name, c, temporalgraph.Options[research.State]{Version: temporalresearch.Version})
	require.NoError(t, err)
	require.Equal(t, temporalresearch.WorkflowName, tg.WorkflowName())
	return tg
}

// TestRecordHistory records historyFile: it runs one research run of the
// script on the Temporal server at $DEEPGRAPH_TEMPORAL_RECORD (HOST:PORT;
// namespace $DEEPGRAPH_TEMPORAL_NAMESPACE, default "default") with a worker
// in this process, and writes the run's history as the JSON the SDK's
// replayer reads (protojson of history.v1.History). See historyFile for
// when and how.
func TestRecordHistory(t *testing.T) {
	addr := os.Getenv("DEEPGRAPH_TEMPORAL_RECORD")
	if addr == "" {
		t.Skip("records " + historyFile + " on a real Temporal server: set DEEPGRAPH_TEMPORAL_RECORD=HOST:PORT (see historyFile's doc)")
	}
	ns := os.Getenv("DEEPGRAPH_TEMPORAL_NAMESPACE")
	if ns == "" {
		ns = client.DefaultNamespace
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const identity = "deepgraph-history-recorder"
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns, Logger: quiet(), Identity: identity})
	require.NoError(t, err)
	defer c.Close()

	stamp := time.Now().UTC().Format("20060102T150405")
	queue := "deepgraph-record-" + stamp
	w := worker.New(c, queue, worker.Options{Identity: identity})
	newResearch(t).Register(w)
	require.NoError(t, w.Start())
	defer w.Stop()

	run, err := temporalresearch.Start(ctx, c, client.StartWorkflowOptions{ID: "research-history-" + stamp, TaskQueue: queue},
		temporalresearch.Request{Question: question})
	require.NoError(t, err)
	out, err := run.Result(ctx)
	require.NoError(t, err)
	rep := out.Report
	require.False(t, rep.Incomplete)
	require.Len(t, rep.Sources, 3)
	require.Equal(t, []string{"raft leader election", "raft log replication", "raft split votes"}, rep.Queries)

	var h historypb.History
	it := c.GetWorkflowHistory(ctx, run.ID(), run.RunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	require.NotEmpty(t, h.Events)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, h.Events[len(h.Events)-1].GetEventType())
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(historyFile), 0o755))
	require.NoError(t, os.WriteFile(historyFile, append(data, '\n'), 0o644))
	t.Logf("recorded run %s (%s) of %s on %s: %d events, %d bytes, in %s",
		run.ID(), run.RunID(), temporalresearch.WorkflowName, addr, len(h.Events), len(data), historyFile)

	// What was written replays.
	require.NoError(t, replayer(t, newResearch(t).Workflow).ReplayWorkflowHistoryFromJSONFile(quiet(), historyFile))
}
