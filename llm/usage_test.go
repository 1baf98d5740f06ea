package llm_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

func tally(calls, failed, prompt, completion int) llm.Tally {
	return llm.Tally{Calls: calls, Failed: failed, Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}}
}

func TestUsageByRoleMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b llm.UsageByRole
		want llm.UsageByRole
	}{
		{"both nil", nil, nil, llm.UsageByRole{}},
		{"nil and some", nil, llm.UsageByRole{"query": tally(1, 0, 10, 2)}, llm.UsageByRole{"query": tally(1, 0, 10, 2)}},
		{"some and nil", llm.UsageByRole{"query": tally(1, 0, 10, 2)}, nil, llm.UsageByRole{"query": tally(1, 0, 10, 2)}},
		{
			"overlapping roles are summed",
			llm.UsageByRole{"query": tally(1, 0, 10, 2), "answer": tally(1, 1, 0, 0)},
			llm.UsageByRole{"query": tally(2, 1, 5, 5), "custom": tally(1, 0, 1, 1)},
			llm.UsageByRole{"query": tally(3, 1, 15, 7), "answer": tally(1, 1, 0, 0), "custom": tally(1, 0, 1, 1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := maps.Clone(tt.a), maps.Clone(tt.b)
			got := tt.a.Merge(tt.b)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, a, tt.a, "Merge must not modify its receiver")
			assert.Equal(t, b, tt.b, "Merge must not modify its argument")
			if len(tt.a) > 0 {
				got["query"] = llm.Tally{Calls: 99}
				assert.NotEqual(t, 99, tt.a["query"].Calls, "the result shares nothing with the inputs")
			}
		})
	}
}

func TestUsageByRoleHelpers(t *testing.T) {
	u := llm.UsageFor(llm.RoleReflection, llm.Usage{PromptTokens: 7, TotalTokens: 7})
	assert.Equal(t, llm.UsageByRole{"reflection": {Calls: 1, Usage: llm.Usage{PromptTokens: 7, TotalTokens: 7}}}, u)

	v := u.Add(llm.RoleQuery, tally(2, 0, 3, 4))
	assert.Len(t, u, 1, "Add returns a new map")
	assert.Equal(t, []string{"query", "reflection"}, v.Roles())
	assert.Equal(t, llm.Tally{Calls: 3, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14}}, v.Total())
	assert.Equal(t, llm.Tally{}, llm.UsageByRole(nil).Total())
	assert.Empty(t, llm.UsageByRole(nil).Roles())
}

func TestUsageByRoleMergeAsReducer(t *testing.T) {
	// The method expression has the shape graph.Reduce wants.
	var merge func(cur, upd llm.UsageByRole) llm.UsageByRole = llm.UsageByRole.Merge
	state := llm.UsageByRole(nil)
	for _, upd := range []llm.UsageByRole{llm.UsageFor("query", llm.Usage{TotalTokens: 5}), llm.UsageFor("query", llm.Usage{TotalTokens: 6})} {
		state = merge(state, upd)
	}
	assert.Equal(t, 2, state["query"].Calls)
	assert.Equal(t, 11, state["query"].Usage.TotalTokens)
}

func TestMeterConcurrent(t *testing.T) {
	var m llm.Meter // the zero value is ready
	assert.Empty(t, m.Snapshot())
	const workers, each = 16, 50
	var wg sync.WaitGroup
	for w := range workers {
		role := llm.RoleResearch
		if w%2 == 0 {
			role = llm.RoleQuery
		}
		wg.Go(func() {
			for range each {
				m.Add(role, tally(1, 0, 2, 1))
				_ = m.Snapshot()
			}
		})
	}
	wg.Wait()
	snap := m.Snapshot()
	assert.Equal(t, workers/2*each, snap[llm.RoleQuery].Calls)
	assert.Equal(t, workers/2*each, snap[llm.RoleResearch].Calls)
	assert.Equal(t, tally(workers*each, 0, 2*workers*each, workers*each), m.Total())

	snap[llm.RoleQuery] = llm.Tally{}
	assert.NotZero(t, m.Snapshot()[llm.RoleQuery].Calls, "a snapshot is a copy")
}

func TestMetered(t *testing.T) {
	var meter llm.Meter
	base := fake.New(
		fake.Text("a").WithTokens(10, 2),
		fake.Error(errors.New("boom")),
		fake.JSON(schemas.SearchQueryList{Query: []string{"q"}, Rationale: "r"}).WithTokens(20, 5),
		fake.Text("b").WithTokens(1, 1),
	)
	query := llm.Metered(base, &meter, llm.RoleQuery)
	answer := llm.Metered(base, &meter, llm.RoleAnswer)
	ctx := context.Background()

	resp, err := query.Generate(ctx, question)
	require.NoError(t, err)
	assert.Equal(t, "a", resp.Content, "the response passes through")
	_, err = query.Generate(ctx, question)
	assert.EqualError(t, err, "boom", "the error passes through unchanged")
	_, err = llm.Structured[schemas.SearchQueryList](ctx, query, question)
	require.NoError(t, err)
	_, err = answer.Generate(ctx, question, llm.MaxTokens(5))
	require.NoError(t, err)

	assert.Equal(t, llm.UsageByRole{
		llm.RoleQuery:  tally(3, 1, 30, 7),
		llm.RoleAnswer: tally(1, 0, 1, 1),
	}, meter.Snapshot())
	assert.Equal(t, 5, base.Calls()[3].Request.MaxTokens, "options pass through")
}

func TestMeteredNilMeter(t *testing.T) {
	m := fake.New()
	assert.Same(t, m, llm.Metered(m, nil, llm.RoleAgent))
}
