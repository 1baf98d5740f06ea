package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
)

type planState struct {
	Topic   string
	Queries []string
	Answer  string
	Usage   llm.UsageByRole
}

var (
	pQueries = graph.Append(func(s *planState) *[]string { return &s.Queries })
	pAnswer  = graph.Value(func(s *planState) *string { return &s.Answer })
	pUsage   = graph.Reduce(func(s *planState) *llm.UsageByRole { return &s.Usage }, llm.UsageByRole.Merge)
)

func TestStructuredAndGenerateNodes(t *testing.T) {
	m := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"a", "b"}, Rationale: "r"}).WithTokens(10, 5).When(fake.Schema("SearchQueryList")),
		fake.Text("the answer").WithTokens(20, 7),
	)
	g := graph.New[planState](pQueries, pAnswer, pUsage)
	g.AddNode("plan", nodes.Structured[planState, schemas.SearchQueryList]{
		Model: m,
		Role:  llm.RoleQuery,
		Prompt: func(s planState) []schemas.Message {
			return []schemas.Message{schemas.UserMessage("queries for " + s.Topic)}
		},
		Write: func(_ planState, out schemas.SearchQueryList) graph.Update[planState] {
			return graph.Writes(pQueries.Add(out.Query...))
		},
		Usage: pUsage,
	}.Node())
	g.AddNode("answer", nodes.Generate[planState]{
		Model:  m,
		Role:   llm.RoleAnswer,
		Prompt: func(s planState) []schemas.Message { return []schemas.Message{schemas.UserMessage("answer")} },
		Write: func(_ planState, r *llm.Response) graph.Update[planState] {
			return graph.Writes(pAnswer.Set(r.Content))
		},
		Usage: pUsage,
	}.Node())
	g.AddSequence(graph.Start, "plan", "answer", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)

	var tokens string
	var final planState
	for ev, err := range c.Stream(context.Background(), planState{Topic: "go"}) {
		require.NoError(t, err)
		if tok, ok := ev.Value.(llm.Token); ok {
			assert.Equal(t, llm.RoleAnswer, tok.Role)
			tokens += tok.Content
		}
		if ev.Kind == graph.EventEnd {
			final = ev.State
		}
	}
	assert.Equal(t, []string{"a", "b"}, final.Queries)
	assert.Equal(t, "the answer", final.Answer)
	assert.Equal(t, "the answer", tokens, "the answer streamed as tokens")
	assert.Equal(t, 15, final.Usage[llm.RoleQuery].Usage.TotalTokens)
	assert.Equal(t, 1, final.Usage[llm.RoleAnswer].Calls)
	assert.Equal(t, "queries for go", m.Calls()[0].LastMessage().Content)
}

func TestNodesWithoutAModel(t *testing.T) {
	n := nodes.Structured[planState, schemas.Reflection]{Role: "reflection"}.Node()
	_, err := n(context.Background(), planState{})
	require.ErrorIs(t, err, llm.ErrNoModel)
	assert.Contains(t, err.Error(), "reflection")
	g := nodes.Generate[planState]{Role: "answer"}.Node()
	_, err = g(context.Background(), planState{})
	require.ErrorIs(t, err, llm.ErrNoModel)
}
