package nodes_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
)

// TestFlowAgentStepAsksForApproval: an agent step whose agent has
// ApproveTools pauses the whole flow at the tool call (Approval set); the
// answer given to the flow's Resume reaches the agent, which goes on where
// it paused — the plan is not made again, the call runs once.
func TestFlowAgentStepAsksForApproval(t *testing.T) {
	saver := graph.NewMemorySaver()
	eff := &effectTool{name: "append"}
	agentModel := fake.New(
		fake.ToolCalls(appendCall("a")),
		fake.ToolCalls(terminate("success", "Appended a.")),
	).Strict()
	a := newAgent(t, agentModel, nodes.AgentConfig{Checkpointer: saver, ApproveTools: true}, eff)
	planner := fake.New(planCall("create", "Lines", "Append a line"), fake.Text("The line was appended."))
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Checkpointer: saver,
		Executors: []nodes.FlowExecutor{{Name: "agent", Executor: nodes.AgentExecutor(a)}}})
	require.NoError(t, err)
	ctx := context.Background()
	thread := graph.Thread("flow-approve")

	res, err := f.Run(ctx, "Append a line", nil, thread)
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.NotNil(t, res)
	require.NotNil(t, res.Approval, "the flow waits on the agent's approval")
	assert.Equal(t, "append", res.Approval.Tool)
	require.NotNil(t, res.Question)
	assert.Contains(t, res.Question.Question, `The agent wants to run append {"line":"a"}`)
	assert.Nil(t, res.Waiting, "no plan review")
	assert.Empty(t, eff.lines(), "nothing runs before it is approved")

	res, err = f.Resume(ctx, nil, thread, graph.Answer("approve"))
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Equal(t, []string{"a"}, eff.lines(), "the approved call ran once")
	assert.Len(t, planner.Calls(), 2, "the plan was made once, then the summary")
	assert.Len(t, agentModel.Calls(), 2, "the agent's first step was not repeated")
}

// memJournal is a CallJournal in memory.
type memJournal struct {
	mu   sync.Mutex
	recs map[string][]byte
}

func (j *memJournal) Recall(_ context.Context, key string) ([]byte, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.recs[key]
	return d, ok, nil
}

func (j *memJournal) Record(_ context.Context, key string, data []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs[key] = data
	return nil
}

// TestFlowStepsKeepTheirOwnCallRecords: two agent steps under one journal
// whose effectful calls have the same step, place and ID (as a provider
// that numbers calls per reply gives them) both run: the second step's
// call is not taken for the first's.
func TestFlowStepsKeepTheirOwnCallRecords(t *testing.T) {
	eff := &effectTool{name: "append"}
	call := func(line string) fake.Reply {
		c := appendCall(line)
		c.ID = "call_0"
		return fake.ToolCalls(c)
	}
	agentModel := fake.New(call("a"), fake.ToolCalls(terminate("success", "Appended a.")), call("b"), fake.ToolCalls(terminate("success", "Appended b.")))
	a := newAgent(t, agentModel, nodes.AgentConfig{}, eff)
	planner := fake.New(planCall("create", "Lines", "Append a", "Append b"), fake.Text("Both appended."))
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Executors: []nodes.FlowExecutor{{Name: "agent", Executor: nodes.AgentExecutor(a)}}})
	require.NoError(t, err)
	j := &memJournal{recs: map[string][]byte{}}
	res, err := f.Run(nodes.WithCallJournal(context.Background(), j), "Append two lines", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Equal(t, []string{"a", "b"}, eff.lines(), "each step's call ran")
	assert.Len(t, j.recs, 4, "an intent and a result per step's call")
}
