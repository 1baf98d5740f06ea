package nodes_test

import (
	"context"
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
