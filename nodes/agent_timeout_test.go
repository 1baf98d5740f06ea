package nodes_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// waitForDeadline is a tool that returns only when its context is done: the
// run's deadline passes while it runs.
func waitForDeadline() tools.Tool {
	return tools.MustFunc("wait", "Waits.", func(ctx context.Context, _ struct{}) (tools.Result, error) {
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	})
}

// timedOutScript: a page is fetched, then a tool call outlives the run's
// deadline; final is the reply to the call made after it.
func timedOutScript(final fake.Reply) *fake.Model {
	return fake.New(
		fake.ToolCalls(fake.ToolCall("fetch", lookupArgs{Key: "go"})),
		fake.ToolCalls(fake.ToolCall("wait", struct{}{})),
		final,
	).Strict()
}

func TestAgentTimedOutRunEndsWithABestEffortAnswer(t *testing.T) {
	// After makes the call honour its context: on the expired run context
	// it would fail, so the answer proves the fresh budget.
	m := timedOutScript(fake.Text("Go is a programming language [S1]; the rest is unchecked.").After(time.Millisecond))
	a := newAgent(t, m, nodes.AgentConfig{}, sourced(), waitForDeadline())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var done []nodes.AgentEvent
	res, err := a.Run(ctx, "What is Go?", func(e nodes.AgentEvent) {
		if e.Kind == nodes.AgentEventDone {
			done = append(done, e)
		}
	})
	require.ErrorIs(t, err, context.DeadlineExceeded, "the run still reports its timeout")
	require.NotNil(t, res)
	assert.Equal(t, nodes.AgentTimedOut, res.Status)
	assert.True(t, res.BestEffort)
	assert.True(t, res.Incomplete)
	assert.True(t, res.Status.Incomplete())
	assert.Contains(t, res.Answer, "Go is a programming language [1](https://example.com/go)")
	require.Len(t, res.Sources, 1)
	assert.Equal(t, "https://example.com/go", res.Sources[0].URL)
	assert.Equal(t, 1, res.Gathered)
	assert.Empty(t, res.Partial)
	require.Len(t, done, 1, "the observer sees the run end")
	assert.Equal(t, nodes.AgentTimedOut, done[0].Status)

	calls := m.Calls()
	require.Len(t, calls, 3)
	last := calls[2]
	assert.Empty(t, last.Request.Tools, "the best-effort call offers no tools")
	assert.Contains(t, last.LastMessage().Content, "run out of time")
	assert.Equal(t, 0, m.Remaining())
}

func TestAgentTimedOutRunKeepsItsPartialWhenTheFinalCallFails(t *testing.T) {
	t.Run("the final call outlives its grace", func(t *testing.T) {
		m := timedOutScript(fake.Text("never sent").Block())
		a := newAgent(t, m, nodes.AgentConfig{TimeoutGrace: 50 * time.Millisecond}, sourced(), waitForDeadline())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		res, err := a.Run(ctx, "What is Go?", nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotNil(t, res)
		assert.Equal(t, nodes.AgentError, res.Status)
		assert.False(t, res.BestEffort)
		assert.True(t, res.Incomplete)
		assert.Empty(t, res.Answer)
		assert.NotEmpty(t, res.Partial, "the extractive partial result")
		assert.Len(t, m.Calls(), 3, "the final call was made, and given up")
	})
	t.Run("a negative grace turns the final call off", func(t *testing.T) {
		m := timedOutScript(fake.Text("never sent"))
		a := newAgent(t, m, nodes.AgentConfig{TimeoutGrace: -1}, sourced(), waitForDeadline())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		res, err := a.Run(ctx, "What is Go?", nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, nodes.AgentError, res.Status)
		assert.Len(t, m.Calls(), 2)
	})
	t.Run("a cancelled run makes no final call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		stop := tools.MustFunc("wait", "Waits.", func(ctx context.Context, _ struct{}) (tools.Result, error) {
			cancel()
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		})
		m := timedOutScript(fake.Text("never sent"))
		a := newAgent(t, m, nodes.AgentConfig{}, sourced(), stop)
		res, err := a.Run(ctx, "What is Go?", nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, nodes.AgentError, res.Status)
		assert.Len(t, m.Calls(), 2)
	})
}

// TestAgentNodeTimedOutHandsTheBestEffortAnswer: an agent inside an outer
// graph whose context passes its deadline hands the outer graph the
// timed-out best-effort answer, as Run gives it, not only its partial.
func TestAgentNodeTimedOutHandsTheBestEffortAnswer(t *testing.T) {
	type outer struct {
		Question string
		Notes    string
	}
	notes := graph.Value(func(s *outer) *string { return &s.Notes })
	m := timedOutScript(fake.Text("Go is a programming language [S1]; the rest is unchecked.").After(time.Millisecond))
	a := newAgent(t, m, nodes.AgentConfig{}, sourced(), waitForDeadline())
	g := graph.New[outer](notes)
	g.AddNode("agent", nodes.AgentNode(a,
		func(s outer) string { return s.Question },
		func(_ outer, r *nodes.AgentResult) graph.Update[outer] { return graph.Writes(notes.Set(r.Answer)) }))
	g.AddSequence(graph.Start, "agent", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Invoke(ctx, outer{Question: "What is Go?"})
	require.ErrorIs(t, err, context.DeadlineExceeded, "the node still reports its timeout")
	var ae *nodes.AgentRunError[outer]
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, nodes.AgentTimedOut, ae.Result.Status)
	assert.True(t, ae.Result.BestEffort)
	assert.Equal(t, "What is Go?", ae.Result.Task)
	assert.Contains(t, ae.Result.Answer, "Go is a programming language [1](https://example.com/go)")
	require.Len(t, ae.Result.Sources, 1)
	data, err := json.Marshal(ae.Update)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Go is a programming language", "the outer graph's update carries the answer")
}
